#!/usr/bin/env python3
"""Checks deploy/Dockerfile, docker-compose.yml and the deploy/k8s kustomize base.

Docker and a cluster are not available where the tests run, so this reads the files and checks
what a reviewer would: they parse, names, labels, selectors and ports agree across files, probes
and security settings are there, every server flag they pass exists in `metaopt-server --help`,
and the runtime image installs the Debian packages of every shared library the built programs
link. When a docker compose client is installed, `docker compose config` must accept the file.

Usage: deploy_test.py SOURCE_DIR METAOPT_SERVER METAOPTCTL
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import unittest

import yaml

SOURCE_DIR = METAOPT_SERVER = METAOPTCTL = None

GRPC_PORT = 50051
METRICS_PORT = 9090
HTTP_PORT = 8080  # the dashboard and its JSON API (--http-listen)
# Always present in debian:12-slim (essential or required by apt).
BASE_PACKAGES = {"libc6", "libgcc-s1", "libstdc++6", "zlib1g"}


def read(rel):
    with open(os.path.join(SOURCE_DIR, rel), encoding="utf-8") as f:
        return f.read()


def load_all(rel):
    return [doc for doc in yaml.safe_load_all(read(rel)) if doc is not None]


def flag_names(args):
    """The --flag names in a list of arguments ("--x=1" or "--x", "1")."""
    return [a.split("=", 1)[0] for a in args if a.startswith("--")]


def help_text(binary):
    out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30)
    return out.stdout + out.stderr


def arg_value(args, flag):
    for a in args:
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    raise AssertionError(f"{flag} missing from {args}")


def port_of(address):
    return int(address.rsplit(":", 1)[1])


class Dockerfile:
    """The instructions of deploy/Dockerfile, line continuations joined, split into stages."""

    def __init__(self, text):
        joined = re.sub(r"\\\n", " ", text)
        self.stages = []
        for line in joined.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            keyword, _, rest = line.partition(" ")
            keyword = keyword.upper()
            if keyword == "FROM":
                self.stages.append([])
            self.stages[-1].append((keyword, rest.strip()))

    def find(self, stage, keyword):
        return [rest for k, rest in self.stages[stage] if k == keyword]


def exec_form(rest):
    """["a", "b"] (JSON exec form) -> list."""
    return yaml.safe_load(rest)


class DockerfileTest(unittest.TestCase):
    def setUp(self):
        self.docker = Dockerfile(read("deploy/Dockerfile"))

    def test_two_stages_on_debian_12(self):
        self.assertEqual(len(self.docker.stages), 2)
        self.assertRegex(self.docker.find(0, "FROM")[0], r"^debian:12 AS build$")
        self.assertRegex(self.docker.find(1, "FROM")[0], r"^debian:12-slim$")

    def test_build_stage_runs_the_ci_scripts(self):
        runs = " ".join(self.docker.find(0, "RUN"))
        # The sets serve.sh installs: no test dependencies (R, chromium, Go, PostgreSQL, Node).
        self.assertIn("bash scripts/install-deps.sh runtime build", runs)
        self.assertRegex(read("scripts/serve.sh"), r'install-deps\.sh"? runtime build\n')
        self.assertIn("bash scripts/build.sh", runs)
        for script in ("scripts/install-deps.sh", "scripts/build.sh"):
            self.assertTrue(os.path.isfile(os.path.join(SOURCE_DIR, script)), script)
        # .ci/run reaches the same scripts (through scripts/test.sh).
        self.assertIn("scripts/test.sh", read(".ci/run"))
        test_sh = read("scripts/test.sh")
        self.assertIn("scripts/install-deps.sh", test_sh)
        self.assertIn("scripts/build.sh", test_sh)

    def test_runtime_stage_is_non_root_with_models_volume_and_healthcheck(self):
        users = self.docker.find(1, "USER")
        self.assertEqual(len(users), 1)
        uid = users[0].split(":")[0]
        self.assertNotIn(uid, ("0", "root"))
        copies = " ".join(self.docker.find(1, "COPY"))
        self.assertIn("--from=build /src/models /opt/metaopt/models", copies)
        self.assertIn("metaopt-server", copies)
        self.assertIn("metaoptctl", copies)
        self.assertIn("metaopt-train", copies)
        self.assertEqual(exec_form(self.docker.find(1, "VOLUME")[0]), ["/var/lib/metaopt"])
        self.assertEqual(self.docker.find(1, "EXPOSE")[0].split(),
                         [str(GRPC_PORT), str(METRICS_PORT), str(HTTP_PORT)])
        health = self.docker.find(1, "HEALTHCHECK")[0]
        command = exec_form(health.split("CMD", 1)[1].strip())
        self.assertEqual(command[0], "metaoptctl")
        self.assertEqual(command[-1], "health")
        self.assertIn(f"--server=127.0.0.1:{GRPC_PORT}", command)
        ctl_help = help_text(METAOPTCTL)
        self.assertRegex(ctl_help, r"\n\s+health\s", "metaoptctl has no health subcommand")
        for flag in flag_names(command):
            self.assertIn(flag, ctl_help, f"metaoptctl does not accept {flag}")

    def test_server_command_uses_flags_the_server_accepts(self):
        self.assertEqual(exec_form(self.docker.find(1, "ENTRYPOINT")[0]), ["metaopt-server"])
        args = exec_form(self.docker.find(1, "CMD")[0])
        server_help = help_text(METAOPT_SERVER)
        for flag in flag_names(args):
            self.assertIn(flag, server_help, f"metaopt-server does not accept {flag}")
        self.assertEqual(port_of(arg_value(args, "--listen")), GRPC_PORT)
        self.assertEqual(port_of(arg_value(args, "--metrics-listen")), METRICS_PORT)
        self.assertEqual(port_of(arg_value(args, "--http-listen")), HTTP_PORT)
        self.assertTrue(arg_value(args, "--db").startswith("/var/lib/metaopt/"))
        # The dashboard's files where the server looks for them (<bin>/../share/metaopt).
        copies = " ".join(self.docker.find(1, "COPY"))
        self.assertIn("/src/build/dashboard/dist /usr/local/share/metaopt/dashboard", copies)
        self.assertEqual(arg_value(args, "--models"), "/opt/metaopt/models")

    def test_runtime_packages_cover_the_linked_libraries(self):
        if shutil.which("ldd") is None or shutil.which("dpkg") is None:
            self.skipTest("needs ldd and dpkg")
        runs = " ".join(self.docker.find(1, "RUN"))
        installed = set(re.findall(r"\b(lib[a-z0-9.+-]+|ca-certificates)\b", runs))
        paths = set()
        for binary in (METAOPT_SERVER, METAOPTCTL):
            ldd = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True)
            for path in re.findall(r"=> (/\S+)", ldd.stdout):
                paths.update({path, os.path.realpath(path)})
        # "package[:arch]: path" per path dpkg knows (merged /usr: one of the two spellings).
        owners = subprocess.run(["dpkg", "-S"] + sorted(paths), capture_output=True, text=True)
        for line in owners.stdout.splitlines():
            package, path = line.split(": ", 1)
            package = package.split(":", 1)[0]
            if package in BASE_PACKAGES:
                continue
            self.assertIn(package, installed,
                          f"a program links {path} from {package}, which the runtime stage "
                          "does not install")


def package_set(name):
    """The packages of scripts/install-deps.sh's array NAME (comments dropped)."""
    text = read("scripts/install-deps.sh")
    body = re.search(rf"^{name}=\((.*?)^\)", text, re.S | re.M).group(1)
    return {w for line in body.splitlines() for w in line.split("#", 1)[0].split()}


class InstallSetsTest(unittest.TestCase):
    """serve.sh and the image's build stage install the runtime and build sets only."""

    def test_serving_sets_hold_no_test_tooling(self):
        serving = package_set("runtime_packages") | package_set("build_packages")
        for heavy in ("r-base-core", "chromium", "golang-go", "nodejs", "npm", "postgresql",
                      "clang", "googletest", "libgtest-dev", "libbenchmark-dev"):
            self.assertNotIn(heavy, serving)
        self.assertIn("libpq-dev", serving)  # PostgreSQL storage is part of the server
        self.assertIn("postgresql", package_set("test_packages"))
        self.assertIn("bash \"$root/scripts/install-deps.sh\" runtime build",
                      read("scripts/serve.sh"))

    def test_the_build_set_builds_what_the_image_links(self):
        # Every -dev package of the build set whose runtime library the image installs.
        runs = " ".join(Dockerfile(read("deploy/Dockerfile")).find(1, "RUN"))
        for dev, library in (("libpq-dev", "libpq5"), ("libsqlite3-dev", "libsqlite3-0"),
                             ("libcivetweb-dev", "libcivetweb1")):
            self.assertIn(dev, package_set("build_packages"))
            self.assertIn(library, runs)


class ComposeTest(unittest.TestCase):
    def setUp(self):
        self.compose = yaml.safe_load(read("docker-compose.yml"))
        self.service = self.compose["services"]["metaopt"]

    def test_builds_the_dockerfile_from_the_repository_root(self):
        self.assertEqual(self.service["build"]["context"], ".")
        self.assertEqual(self.service["build"]["dockerfile"], "deploy/Dockerfile")

    def test_named_volume_holds_the_database(self):
        volumes = self.service["volumes"]
        self.assertEqual(len(volumes), 1)
        name, target = volumes[0].split(":")[:2]
        self.assertIn(name, self.compose["volumes"])
        args = self.service["command"]
        self.assertTrue(arg_value(args, "--db").startswith(target + "/"))
        self.assertEqual(target, "/var/lib/metaopt")

    def test_publishes_grpc_metrics_and_dashboard_ports(self):
        published = {int(p.split(":")[-1]) for p in self.service["ports"]}
        args = self.service["command"]
        self.assertEqual(published, {port_of(arg_value(args, "--listen")),
                                     port_of(arg_value(args, "--metrics-listen")),
                                     port_of(arg_value(args, "--http-listen"))})
        self.assertEqual(published, {GRPC_PORT, METRICS_PORT, HTTP_PORT})
        server_help = help_text(METAOPT_SERVER)
        for flag in flag_names(args):
            self.assertIn(flag, server_help, f"metaopt-server does not accept {flag}")

    def test_docker_compose_config_accepts_it(self):
        for command in (["docker", "compose"], ["docker-compose"]):
            if shutil.which(command[0]) is None:
                continue
            probe = subprocess.run(command + ["version"], capture_output=True, text=True)
            if probe.returncode != 0:
                continue
            result = subprocess.run(command + ["-f", "docker-compose.yml", "config", "-q"],
                                    cwd=SOURCE_DIR, capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 0, result.stderr)
            return
        self.skipTest("no docker compose client")


class ComposePostgresProfileTest(unittest.TestCase):
    """The `postgres` profile: PostgreSQL plus replicas that share it."""

    def setUp(self):
        self.services = yaml.safe_load(read("docker-compose.yml"))["services"]
        self.replicas = {name: s for name, s in self.services.items()
                         if "postgres" in s.get("profiles", []) and name != "postgres"}

    def test_postgres_and_two_replicas_in_the_profile_only(self):
        self.assertEqual(self.services["postgres"]["profiles"], ["postgres"])
        self.assertGreaterEqual(len(self.replicas), 2)
        self.assertNotIn("profiles", self.services["metaopt"])

    def test_replicas_share_the_database_and_wait_for_it(self):
        environment = self.services["postgres"]["environment"]
        uri = (f"postgresql://{environment['POSTGRES_USER']}:{environment['POSTGRES_PASSWORD']}"
               f"@postgres:5432/{environment['POSTGRES_DB']}")
        server_help = help_text(METAOPT_SERVER)
        published = []
        for name, replica in self.replicas.items():
            args = replica["command"]
            self.assertEqual(arg_value(args, "--db"), uri, name)
            for flag in flag_names(args):
                self.assertIn(flag, server_help, f"metaopt-server does not accept {flag}")
            self.assertEqual(replica["depends_on"]["postgres"]["condition"], "service_healthy")
            self.assertNotIn("volumes", replica, f"{name} keeps no state of its own")
            published += [int(p.split(":")[0]) for p in replica["ports"]]
        self.assertEqual(len(published), len(set(published)), "host ports collide")
        self.assertNotIn(GRPC_PORT, published)


class PostgresOverlayTest(unittest.TestCase):
    """deploy/k8s/overlays/postgres: a Deployment of replicas over a PostgreSQL Service."""

    DIR = "deploy/k8s/overlays/postgres"

    def setUp(self):
        self.kustomization = yaml.safe_load(read(os.path.join(self.DIR, "kustomization.yaml")))
        self.objects = []
        for resource in self.kustomization["resources"]:
            if not resource.startswith("../"):
                self.objects.extend(load_all(os.path.join(self.DIR, resource)))
        self.by_kind = {}
        for obj in self.objects:
            self.by_kind.setdefault(obj["kind"], []).append(obj)
        self.deployment = self.by_kind["Deployment"][0]
        self.pod = self.deployment["spec"]["template"]
        self.container = self.pod["spec"]["containers"][0]

    def test_every_file_is_listed_on_the_base(self):
        listed = {r for r in self.kustomization["resources"] if not r.startswith("../")}
        on_disk = {f for f in os.listdir(os.path.join(SOURCE_DIR, self.DIR))
                   if f.endswith(".yaml")} - {"kustomization.yaml"}
        self.assertEqual(listed, on_disk)
        self.assertIn("../../base", self.kustomization["resources"])

    def test_replicas_serve_every_port_the_base_service_targets(self):
        ports = {p["name"]: p["containerPort"] for p in self.container["ports"]}
        base = [s for s in load_all("deploy/k8s/base/service.yaml")
                if s["metadata"]["name"] == "metaopt"][0]
        for port in base["spec"]["ports"]:
            self.assertEqual(ports.get(port["targetPort"]), port["port"], port["name"])
        self.assertEqual(port_of(arg_value(self.container["args"], "--http-listen")), HTTP_PORT)

    def test_replicas_are_selected_by_the_base_service(self):
        self.assertGreaterEqual(self.deployment["spec"]["replicas"], 2)
        labels = self.pod["metadata"]["labels"]
        base = [s for s in load_all("deploy/k8s/base/service.yaml")
                if s["metadata"]["name"] == "metaopt"][0]
        self.assertTrue(base["spec"]["selector"].items() <= labels.items())
        self.assertTrue(self.deployment["spec"]["selector"]["matchLabels"].items()
                        <= labels.items())
        database = self.by_kind["StatefulSet"][0]["spec"]["template"]["metadata"]["labels"]
        self.assertFalse(base["spec"]["selector"].items() <= database.items(),
                         "the metaopt Service must not select the database")

    def test_db_comes_from_the_secret_and_flags_exist(self):
        args = self.container["args"]
        server_help = help_text(METAOPT_SERVER)
        for flag in flag_names(args):
            self.assertIn(flag, server_help, f"metaopt-server does not accept {flag}")
        self.assertNotIn("--db", flag_names(args), "the URI holds a password: not in argv")
        env = {e["name"]: e for e in self.container["env"]}
        ref = env["METAOPT_DB"]["valueFrom"]["secretKeyRef"]
        self.assertEqual((ref["name"], ref["key"]), ("metaopt-postgres", "uri"))
        self.assertNotIn("secretGenerator", self.kustomization, "no credentials in the repository")
        self.assertNotIn("volumeClaimTemplates", self.deployment["spec"])

    def test_readiness_follows_the_database_and_liveness_does_not(self):
        readiness = self.container["readinessProbe"]["grpc"]
        self.assertEqual(readiness["service"], "metaopt.v1.OptimizerService")
        self.assertNotIn("service", self.container["livenessProbe"]["grpc"])


class KustomizeTest(unittest.TestCase):
    def setUp(self):
        self.kustomization = yaml.safe_load(read("deploy/k8s/base/kustomization.yaml"))
        self.overlay = yaml.safe_load(read("deploy/k8s/overlays/sqlite/kustomization.yaml"))
        self.objects = []
        for resource in self.kustomization["resources"]:
            self.objects.extend(load_all(os.path.join("deploy/k8s/base", resource)))
        for resource in self.overlay["resources"]:
            if not resource.startswith("../"):
                self.objects.extend(load_all(os.path.join("deploy/k8s/overlays/sqlite", resource)))
        self.by_kind = {}
        for obj in self.objects:
            self.by_kind.setdefault(obj["kind"], []).append(obj)
        self.sts = self.by_kind["StatefulSet"][0]
        self.pod = self.sts["spec"]["template"]
        self.container = self.pod["spec"]["containers"][0]
        self.ports = {p["name"]: p["containerPort"] for p in self.container["ports"]}

    def test_every_file_is_listed_and_parses(self):
        for directory, kustomization in (("deploy/k8s/base", self.kustomization),
                                         ("deploy/k8s/overlays/sqlite", self.overlay)):
            listed = {r for r in kustomization["resources"] if not r.startswith("../")}
            on_disk = {f for f in os.listdir(os.path.join(SOURCE_DIR, directory))
                       if f.endswith(".yaml")}
            self.assertEqual(listed, on_disk - {"kustomization.yaml"})
        for obj in self.objects:
            self.assertIn("apiVersion", obj)
            self.assertIn("name", obj["metadata"])
        self.assertEqual(sorted(self.by_kind),
                         ["NetworkPolicy", "Service", "ServiceAccount", "StatefulSet"])

    def test_statefulset_has_one_replica_and_matching_selectors(self):
        spec = self.sts["spec"]
        self.assertEqual(spec["replicas"], 1)
        selector = spec["selector"]["matchLabels"]
        labels = self.pod["metadata"]["labels"]
        self.assertTrue(selector.items() <= labels.items())
        headless = [s for s in self.by_kind["Service"]
                    if s["metadata"]["name"] == spec["serviceName"]]
        self.assertEqual(len(headless), 1, "serviceName names no Service")
        self.assertEqual(headless[0]["spec"]["clusterIP"], "None")
        self.assertEqual(self.pod["spec"]["serviceAccountName"],
                         self.by_kind["ServiceAccount"][0]["metadata"]["name"])

    def test_services_select_the_pod_and_target_named_ports(self):
        labels = self.pod["metadata"]["labels"]
        names = set()
        for service in self.by_kind["Service"]:
            self.assertTrue(service["spec"]["selector"].items() <= labels.items(),
                            service["metadata"]["name"])
            for port in service["spec"]["ports"]:
                self.assertIn(port["targetPort"], self.ports)
                self.assertEqual(port["port"], self.ports[port["targetPort"]])
                names.add(port["name"])
        self.assertEqual(names, {"grpc", "metrics", "http"})

    def test_args_agree_with_ports_mounts_and_server_flags(self):
        args = self.container["args"]
        server_help = help_text(METAOPT_SERVER)
        for flag in flag_names(args):
            self.assertIn(flag, server_help, f"metaopt-server does not accept {flag}")
        self.assertEqual(port_of(arg_value(args, "--listen")), self.ports["grpc"])
        self.assertEqual(port_of(arg_value(args, "--metrics-listen")), self.ports["metrics"])
        self.assertEqual(port_of(arg_value(args, "--http-listen")), self.ports["http"])
        self.assertEqual(self.ports,
                         {"grpc": GRPC_PORT, "metrics": METRICS_PORT, "http": HTTP_PORT})
        mounts = {m["name"]: m for m in self.container["volumeMounts"]}
        db_dir = os.path.dirname(arg_value(args, "--db"))
        self.assertEqual(mounts["data"]["mountPath"], db_dir)
        self.assertFalse(mounts["data"].get("readOnly", False))
        self.assertEqual(mounts["models"]["mountPath"], arg_value(args, "--models"))
        self.assertEqual(mounts["tmp"]["mountPath"], "/tmp")

    def test_volumes_come_from_claim_templates_or_the_pod(self):
        claims = {c["metadata"]["name"]: c for c in self.sts["spec"]["volumeClaimTemplates"]}
        self.assertEqual(set(claims), {"data", "models"})
        for claim in claims.values():
            self.assertEqual(claim["spec"]["accessModes"], ["ReadWriteOnce"])
            self.assertIn("storage", claim["spec"]["resources"]["requests"])
        pod_volumes = {v["name"] for v in self.pod["spec"].get("volumes", [])}
        containers = self.pod["spec"]["containers"] + self.pod["spec"].get("initContainers", [])
        for container in containers:
            for mount in container.get("volumeMounts", []):
                self.assertIn(mount["name"], set(claims) | pod_volumes, mount["name"])

    def test_native_grpc_probes_on_the_grpc_port(self):
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            self.assertIn(probe, self.container)
            self.assertEqual(self.container[probe]["grpc"]["port"], self.ports["grpc"], probe)

    def test_resources_and_security_context(self):
        pod_security = self.pod["spec"]["securityContext"]
        self.assertTrue(pod_security["runAsNonRoot"])
        self.assertNotEqual(pod_security["runAsUser"], 0)
        self.assertEqual(pod_security["seccompProfile"]["type"], "RuntimeDefault")
        docker = Dockerfile(read("deploy/Dockerfile"))
        self.assertEqual(str(pod_security["runAsUser"]),
                         docker.find(1, "USER")[0].split(":")[0])
        self.assertFalse(self.pod["spec"]["automountServiceAccountToken"])
        for container in self.pod["spec"]["containers"] + self.pod["spec"]["initContainers"]:
            security = container["securityContext"]
            self.assertTrue(security["readOnlyRootFilesystem"], container["name"])
            self.assertFalse(security["allowPrivilegeEscalation"], container["name"])
            self.assertEqual(security["capabilities"]["drop"], ["ALL"], container["name"])
            for kind in ("requests", "limits"):
                self.assertIn("cpu", container["resources"][kind], container["name"])
                self.assertIn("memory", container["resources"][kind], container["name"])

    def test_prometheus_scrape_annotations(self):
        annotations = self.pod["metadata"]["annotations"]
        self.assertEqual(annotations["prometheus.io/scrape"], "true")
        self.assertEqual(int(annotations["prometheus.io/port"]), self.ports["metrics"])
        self.assertEqual(annotations["prometheus.io/path"], "/metrics")

    def test_seed_container_copies_the_bundled_registry_without_overwriting(self):
        init = self.pod["spec"]["initContainers"][0]
        script = " ".join(init["command"])
        self.assertIn("cp -R -n /opt/metaopt/models/.", script)
        self.assertEqual(init["volumeMounts"][0]["name"], "models")
        self.assertIn(init["volumeMounts"][0]["mountPath"], script)

    def test_tokens_component_patches_the_statefulset(self):
        component = yaml.safe_load(read("deploy/k8s/components/tokens/kustomization.yaml"))
        self.assertEqual(component["kind"], "Component")
        patch = component["patches"][0]
        self.assertEqual(patch["target"], {"kind": "StatefulSet|Deployment",
                                           "labelSelector": "app.kubernetes.io/component=server"})
        ops = yaml.safe_load(patch["patch"])
        values = {op["path"]: op["value"] for op in ops}
        token_arg = values["/spec/template/spec/containers/0/args/-"]
        self.assertIn(flag_names([token_arg])[0], help_text(METAOPT_SERVER))
        mount = values["/spec/template/spec/containers/0/volumeMounts/-"]
        volume = values["/spec/template/spec/volumes/-"]
        self.assertEqual(mount["name"], volume["name"])
        self.assertTrue(token_arg.split("=", 1)[1].startswith(mount["mountPath"] + "/"))
        self.assertEqual(volume["secret"]["secretName"], "metaopt-auth")


def main():
    global SOURCE_DIR, METAOPT_SERVER, METAOPTCTL
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    SOURCE_DIR, METAOPT_SERVER, METAOPTCTL = sys.argv[1:4]
    unittest.main(argv=[sys.argv[0], "-v"])


if __name__ == "__main__":
    main()
