#!/usr/bin/env python3
"""Renders every kustomization in deploy/k8s with `kubectl kustomize` and checks the manifests.

What each overlay promises, checked on the rendered objects (not on the files):
- every server pod of every overlay mounts the Secret metaopt-auth and runs with --tokens;
- the TLS component mounts the Secret metaopt-tls, passes --tls-cert and --tls-key, and probes
  over TLS with flags metaoptctl accepts;
- no Secret is rendered (credentials are created by the operator, never generated from
  literals in the repository), and a PostgreSQL URI reaches the server only through the
  environment variable METAOPT_DB from a Secret, never in its arguments;
- every image is pinned to a tag that is not `latest`; metaopt's tag is the project's version;
- the NetworkPolicy, the ServiceMonitor and the Ingress select what exists;
- every server flag exists in `metaopt-server --help`;
- the Katib component (deploy/katib) serves the port `katib` on every deployable overlay, its
  katib-config entries register metaopt's algorithms, and its example Experiment is consistent;
- docs/deploy.md's team deployment is the overlay rendered here, and its `kubectl create secret`
  commands create every Secret (and key) the rendered pods read.

Usage: kustomize_test.py SOURCE_DIR KUBECTL METAOPT_SERVER METAOPTCTL
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

SOURCE_DIR = KUBECTL = METAOPT_SERVER = METAOPTCTL = None
K8S = "deploy/k8s"
SERVER_KINDS = ("Deployment", "StatefulSet")


def path(*parts):
    return os.path.join(SOURCE_DIR, *parts)


def render(directory):
    result = subprocess.run([KUBECTL, "kustomize", directory], capture_output=True, text=True,
                            timeout=120)
    if result.returncode != 0:
        raise AssertionError(f"kubectl kustomize {directory} failed:\n{result.stderr}")
    return [o for o in yaml.safe_load_all(result.stdout) if o is not None]


def help_text(binary):
    out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30)
    return out.stdout + out.stderr


def flag_names(args):
    return [a.split("=", 1)[0] for a in args if a.startswith("--")]


def project_version():
    with open(path("CMakeLists.txt"), encoding="utf-8") as f:
        return re.search(r"project\(metaopt VERSION (\S+)", f.read()).group(1)


def kustomization_dirs(kind):
    """The directories under deploy/k8s whose kustomization.yaml has this `kind`."""
    found = []
    for directory, _, files in os.walk(path(K8S)):
        if "kustomization.yaml" in files:
            with open(os.path.join(directory, "kustomization.yaml"), encoding="utf-8") as f:
                if yaml.safe_load(f).get("kind") == kind:
                    found.append(os.path.relpath(directory, SOURCE_DIR))
    return sorted(found)


def server_workloads(objects):
    return [o for o in objects if o["kind"] in SERVER_KINDS
            and o["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/component")
            == "server"]


def by_kind(objects, kind):
    return [o for o in objects if o["kind"] == kind]


def mount_of(pod_spec, container, file_path):
    """(mount, volume) whose mountPath holds file_path."""
    for mount in container.get("volumeMounts", []):
        if file_path.startswith(mount["mountPath"].rstrip("/") + "/"):
            volume = [v for v in pod_spec["volumes"] if v["name"] == mount["name"]][0]
            return mount, volume
    raise AssertionError(f"no volume is mounted where {file_path} is")


def secret_keys_read(objects):
    """{secret name: set of keys} that the rendered pods read (volumes with a file path in an
    argument or probe, and secretKeyRef environment variables)."""
    read = {}
    for workload in [o for o in objects if o["kind"] in SERVER_KINDS]:
        spec = workload["spec"]["template"]["spec"]
        for container in spec["containers"]:
            for env in container.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    read.setdefault(ref["name"], set()).add(ref["key"])
            words = list(container.get("args", []))
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                words += container.get(probe, {}).get("exec", {}).get("command", [])
            for word in words:
                value = word.split("=", 1)[-1]
                if not value.startswith("/"):
                    continue
                for mount in container.get("volumeMounts", []):
                    if value.startswith(mount["mountPath"].rstrip("/") + "/"):
                        volume = [v for v in spec["volumes"] if v["name"] == mount["name"]][0]
                        if "secret" in volume:
                            read.setdefault(volume["secret"]["secretName"], set()).add(
                                os.path.relpath(value, mount["mountPath"]))
    return read


class Rendered:
    """Every overlay, rendered once."""
    overlays = {}


def setUpModule():
    for directory in kustomization_dirs("Kustomization"):
        Rendered.overlays[directory] = render(path(directory))


class OverlaysTest(unittest.TestCase):
    def test_the_overlays_are_there_and_the_base_has_no_pods(self):
        self.assertIn(f"{K8S}/base", Rendered.overlays)
        for name in ("sqlite", "postgres", "team"):
            self.assertIn(f"{K8S}/overlays/{name}", Rendered.overlays)
        self.assertEqual(server_workloads(Rendered.overlays[f"{K8S}/base"]), [])

    def test_every_server_pod_runs_with_tokens_from_the_secret(self):
        server_help = help_text(METAOPT_SERVER)
        for directory, objects in Rendered.overlays.items():
            for workload in server_workloads(objects):
                with self.subTest(overlay=directory, workload=workload["metadata"]["name"]):
                    spec = workload["spec"]["template"]["spec"]
                    container = spec["containers"][0]
                    args = container["args"]
                    tokens = [a.split("=", 1)[1] for a in args if a.startswith("--tokens=")]
                    self.assertEqual(len(tokens), 1, args)
                    mount, volume = mount_of(spec, container, tokens[0])
                    self.assertTrue(mount.get("readOnly"))
                    self.assertEqual(volume["secret"]["secretName"], "metaopt-auth")
                    for flag in flag_names(args):
                        self.assertIn(flag, server_help, f"metaopt-server has no {flag}")

    def test_no_secret_is_generated_and_no_uri_is_an_argument(self):
        for directory, objects in Rendered.overlays.items():
            with self.subTest(overlay=directory):
                self.assertEqual(by_kind(objects, "Secret"), [],
                                 "credentials must come from Secrets the operator creates")
                for workload in [o for o in objects if o["kind"] in SERVER_KINDS]:
                    for container in workload["spec"]["template"]["spec"]["containers"]:
                        words = container.get("args", []) + container.get("command", [])
                        for word in words:
                            self.assertNotIn("postgresql://", word)
                            self.assertNotIn("$(", word, "an environment variable in argv")
                        for env in container.get("env", []):
                            if "PASSWORD" in env["name"] or env["name"] == "METAOPT_DB":
                                self.assertNotIn("value", env, f"{env['name']}: a literal")

    def test_postgres_replicas_read_the_uri_from_a_secret_through_the_environment(self):
        for directory in (f"{K8S}/overlays/postgres", f"{K8S}/overlays/team"):
            objects = Rendered.overlays[directory]
            (deployment,) = by_kind(server_workloads(objects), "Deployment")
            self.assertGreaterEqual(deployment["spec"]["replicas"], 2)
            container = deployment["spec"]["template"]["spec"]["containers"][0]
            self.assertNotIn("--db", flag_names(container["args"]))
            env = {e["name"]: e for e in container["env"]}
            ref = env["METAOPT_DB"]["valueFrom"]["secretKeyRef"]
            self.assertEqual((ref["name"], ref["key"]), ("metaopt-postgres", "uri"))
            self.assertIn("METAOPT_DB", help_text(METAOPT_SERVER))

    def test_images_are_pinned(self):
        version = project_version()
        for directory, objects in Rendered.overlays.items():
            for workload in [o for o in objects if o["kind"] in SERVER_KINDS]:
                spec = workload["spec"]["template"]["spec"]
                for container in spec["containers"] + spec.get("initContainers", []):
                    image = container["image"]
                    with self.subTest(overlay=directory, image=image):
                        name, _, tag = image.rpartition(":")
                        self.assertTrue(name and tag and "/" not in tag, "no tag")
                        self.assertNotEqual(tag, "latest")
                        if name.rsplit("/", 1)[-1] == "metaopt":
                            self.assertEqual(tag, version)
                        else:
                            self.assertRegex(tag, r"\d+\.\d+", "a moving major-version tag")

    def test_network_policies_select_pods_and_name_their_ports(self):
        for directory, objects in Rendered.overlays.items():
            pods = [o["spec"]["template"] for o in objects if o["kind"] in SERVER_KINDS]
            if not pods:
                continue
            policies = by_kind(objects, "NetworkPolicy")
            for pod in pods:
                labels = pod["metadata"]["labels"]
                selecting = [p for p in policies
                             if p["spec"]["podSelector"]["matchLabels"].items() <= labels.items()]
                with self.subTest(overlay=directory, pod=labels):
                    self.assertEqual(len(selecting), 1, "each pod under one NetworkPolicy")
                    ports = {p["name"] for c in pod["spec"]["containers"]
                             for p in c.get("ports", [])}
                    allowed = {p["port"] for rule in selecting[0]["spec"]["ingress"]
                               for p in rule["ports"]}
                    self.assertEqual(allowed, ports)

    def test_team_scrapes_with_a_service_monitor_and_exposes_the_dashboard(self):
        objects = Rendered.overlays[f"{K8S}/overlays/team"]
        services = {s["metadata"]["name"]: s for s in by_kind(objects, "Service")}
        (monitor,) = by_kind(objects, "ServiceMonitor")
        selected = [s for s in services.values() if monitor["spec"]["selector"]["matchLabels"]
                    .items() <= s["metadata"].get("labels", {}).items()]
        self.assertEqual([s["metadata"]["name"] for s in selected], ["metaopt"])
        port_names = {p["name"] for p in services["metaopt"]["spec"]["ports"]}
        for endpoint in monitor["spec"]["endpoints"]:
            self.assertIn(endpoint["port"], port_names)
            self.assertEqual(endpoint["path"], "/metrics")
        (ingress,) = by_kind(objects, "Ingress")
        for rule in ingress["spec"]["rules"]:
            for p in rule["http"]["paths"]:
                backend = p["backend"]["service"]
                self.assertIn(backend["name"], services)
                self.assertEqual(backend["port"]["name"], "http")
        self.assertIn(ingress["spec"]["rules"][0]["host"], ingress["spec"]["tls"][0]["hosts"])
        self.assertTrue(all(o["metadata"].get("namespace") == "ml-platform" for o in objects))

    def test_team_serves_tls_and_probes_over_it(self):
        ctl_help = help_text(METAOPTCTL)
        health_help = subprocess.run([METAOPTCTL, "health", "--help"], capture_output=True,
                                     text=True, timeout=30).stdout
        (deployment,) = server_workloads(Rendered.overlays[f"{K8S}/overlays/team"])
        spec = deployment["spec"]["template"]["spec"]
        container = spec["containers"][0]
        args = dict(a.split("=", 1) for a in container["args"] if "=" in a)
        for flag in ("--tls-cert", "--tls-key"):
            mount, volume = mount_of(spec, container, args[flag])
            self.assertEqual(volume["secret"]["secretName"], "metaopt-tls")
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            command = container[probe]["exec"]["command"]
            self.assertEqual(command[0], "metaoptctl")
            self.assertIn("--tls", command)
            self.assertIn("health", command)
            health = command.index("health")
            for flag in flag_names(command[:health]):
                self.assertIn(flag, ctl_help, f"metaoptctl has no {flag}")
            for flag in flag_names(command[health:]):
                self.assertIn(flag, health_help, f"metaoptctl health has no {flag}")
            self.assertNotIn("grpc", container[probe], "native gRPC probes speak plaintext")


class ComponentsTest(unittest.TestCase):
    def test_every_component_renders_over_each_deployable_overlay(self):
        components = kustomization_dirs("Component")
        self.assertEqual({os.path.basename(c) for c in components},
                         {"tokens", "tls", "servicemonitor", "ingress"})
        with tempfile.TemporaryDirectory() as tmp:
            for overlay in (f"{K8S}/overlays/sqlite", f"{K8S}/overlays/postgres"):
                for component in components:
                    with self.subTest(overlay=overlay, component=component):
                        directory = os.path.join(tmp, os.path.basename(overlay),
                                                 os.path.basename(component))
                        os.makedirs(directory)
                        with open(os.path.join(directory, "kustomization.yaml"), "w") as f:
                            yaml.safe_dump({
                                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                                "kind": "Kustomization",
                                "resources": [os.path.relpath(path(overlay), directory)],
                                "components": [os.path.relpath(path(component), directory)],
                            }, f)
                        objects = render(directory)
                        self.assertEqual(len(server_workloads(objects)), 1)


class KatibComponentTest(unittest.TestCase):
    """deploy/katib: the Katib port on the server pods and Service, the katib-config entries and
    the example Experiment (docs/katib.md)."""

    ALGORITHMS = {"metaopt-deeppipe", "metaopt-gp", "metaopt-pmf", "metaopt-mosaic"}

    def load(self, name):
        with open(path("deploy/katib", name), encoding="utf-8") as f:
            return yaml.safe_load(f)

    def test_the_component_serves_the_katib_port_over_each_deployable_overlay(self):
        server_help = help_text(METAOPT_SERVER)
        with tempfile.TemporaryDirectory() as tmp:
            for overlay in (f"{K8S}/overlays/sqlite", f"{K8S}/overlays/postgres",
                            f"{K8S}/overlays/team"):
                with self.subTest(overlay=overlay):
                    directory = os.path.join(tmp, os.path.basename(overlay))
                    os.makedirs(directory)
                    with open(os.path.join(directory, "kustomization.yaml"), "w") as f:
                        yaml.safe_dump({
                            "apiVersion": "kustomize.config.k8s.io/v1beta1",
                            "kind": "Kustomization",
                            "resources": [os.path.relpath(path(overlay), directory)],
                            "components": [os.path.relpath(path("deploy/katib"), directory)],
                        }, f)
                    objects = render(directory)
                    (workload,) = server_workloads(objects)
                    container = workload["spec"]["template"]["spec"]["containers"][0]
                    self.assertIn("--katib-listen=0.0.0.0:6789", container["args"])
                    for flag in flag_names(container["args"]):
                        self.assertIn(flag, server_help, f"metaopt-server has no {flag}")
                    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
                    self.assertEqual(ports["katib"], 6789)
                    services = {s["metadata"]["name"]: s for s in by_kind(objects, "Service")}
                    katib = [p for p in services["metaopt"]["spec"]["ports"]
                             if p["name"] == "katib"]
                    self.assertEqual([(p["port"], p["targetPort"]) for p in katib],
                                     [(6789, "katib")])
                    (policy,) = [p for p in by_kind(objects, "NetworkPolicy")
                                 if p["metadata"]["name"] == "metaopt"]
                    allowed = {p["port"] for rule in policy["spec"]["ingress"]
                               for p in rule["ports"]}
                    self.assertEqual(allowed, set(ports))

    def test_katib_config_registers_the_algorithms_and_forwards_both_ports(self):
        config = self.load("katib-config.yaml")
        self.assertEqual(config["kind"], "KatibConfig")
        suggestions = config["runtime"]["suggestions"]
        self.assertEqual({s["algorithmName"] for s in suggestions}, self.ALGORITHMS)
        for entry in suggestions:
            with self.subTest(algorithm=entry["algorithmName"]):
                script = " ".join(entry.get("command", []) + entry.get("args", []))
                for port in (6789, 6788):
                    self.assertIn(f"TCP-LISTEN:{port},", script)
                self.assertEqual(script.count("TCP:metaopt.ml-platform.svc:6789"), 2)
        stoppings = config["runtime"]["earlyStoppings"]
        self.assertEqual({s["algorithmName"] for s in stoppings},
                         {"metaopt-median", "metaopt-asha"})
        for entry in suggestions + stoppings:
            name, _, tag = entry["image"].rpartition(":")
            self.assertTrue(name and tag and tag != "latest", entry["image"])

    def test_the_example_experiment_uses_a_registered_algorithm_and_every_parameter(self):
        experiment = self.load("experiment.yaml")
        spec = experiment["spec"]
        self.assertIn(spec["algorithm"]["algorithmName"], self.ALGORITHMS)
        names = [p["name"] for p in spec["parameters"]]
        template = spec["trialTemplate"]
        references = [t["reference"] for t in template["trialParameters"]]
        self.assertEqual(sorted(references), sorted(names))
        (container,) = template["trialSpec"]["spec"]["template"]["spec"]["containers"]
        command = " ".join(container["command"])
        for parameter in template["trialParameters"]:
            self.assertEqual(command.count("${trialParameters.%s}" % parameter["name"]), 1)
        self.assertEqual(container["name"], template["primaryContainerName"])


class DeployDocTest(unittest.TestCase):
    """docs/deploy.md, "A team deployment, step by step"."""

    def setUp(self):
        with open(path("docs/deploy.md"), encoding="utf-8") as f:
            text = f.read()
        start = text.index("## A team deployment, step by step")
        end = text.find("\n## ", start + 1)
        self.section = text[start:end if end >= 0 else len(text)]
        self.blocks = re.findall(r"```(\w*)\n(.*?)```", self.section, re.S)

    def test_the_shown_kustomization_is_the_team_overlay(self):
        yamls = [body for lang, body in self.blocks if lang == "yaml"]
        with open(path(K8S, "overlays/team/kustomization.yaml"), encoding="utf-8") as f:
            self.assertIn(f.read(), yamls)

    def test_the_created_secrets_are_the_ones_the_pods_read(self):
        shell = "\n".join(body for lang, body in self.blocks if lang == "sh")
        shell = re.sub(r"\\\n\s*", " ", shell)
        created = {}
        for line in shell.splitlines():
            match = re.search(r"kubectl -n ml-platform create secret (generic|tls) (\S+)(.*)",
                              line)
            if not match:
                continue
            kind, name, rest = match.groups()
            keys = set(re.findall(r"--from-(?:file|literal)=([\w.-]+)=", rest))
            if kind == "tls":
                keys |= {"tls.crt", "tls.key"}
            created.setdefault(name, set()).update(keys)
        read = secret_keys_read(Rendered.overlays[f"{K8S}/overlays/team"])
        for name, keys in read.items():
            self.assertIn(name, created, f"the steps create no Secret {name}")
            self.assertTrue(keys <= created[name], f"{name}: {keys - created[name]} missing")
        self.assertIn("kubectl apply -k deploy/k8s/overlays/team", shell)


def main():
    global SOURCE_DIR, KUBECTL, METAOPT_SERVER, METAOPTCTL
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    SOURCE_DIR, KUBECTL, METAOPT_SERVER, METAOPTCTL = sys.argv[1:5]
    if not os.path.isfile(KUBECTL):
        KUBECTL = shutil.which("kubectl") or KUBECTL
    if not os.access(KUBECTL, os.X_OK):
        sys.exit(f"no kubectl at {KUBECTL}: run scripts/install-deps.sh (tools/kubectl)")
    unittest.main(argv=[sys.argv[0], "-v"])


if __name__ == "__main__":
    main()
