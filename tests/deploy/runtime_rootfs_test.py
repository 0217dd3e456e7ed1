#!/usr/bin/env python3
"""Stages the runtime image's file system from deploy/Dockerfile and runs the server in it.

No container engine runs where the tests run, so this builds what the Dockerfile's runtime stage
would hold, offline: the files of exactly the Debian packages its `apt-get install` names (as
installed on this Debian 12 machine, `dpkg -L`) plus those of debian:12-slim's C and C++ runtime
(libc6, libgcc-s1, libstdc++6, zlib1g), the files its COPY lines take from the build tree, its
user and its volume directory. It then runs the ENTRYPOINT with the CMD's arguments (free ports)
chrooted into that tree (`unshare --root`, as the image's user 10001 when run as root, else as
root of a user namespace), and checks through the HEALTHCHECK's command, run in the same tree, that
the server is healthy; it then runs one study with the tree's metaoptctl, reads the dashboard and
the metrics, and checks that the database is in the volume.

What it covers: the runtime stage's package list and COPY lines are enough for the three programs
to load and run, the server starts healthy from the image's paths (models, dashboard) with
the image's command line, and the HEALTHCHECK command works. What it cannot cover: the
debian:12-slim base itself (only its C/C++ runtime is staged), apt's dependency resolution
(packages are taken as this machine installed them), Docker's USER, VOLUME and HEALTHCHECK
semantics and the image's size (the staged tree's size is printed instead).

Usage: runtime_rootfs_test.py SOURCE_DIR BUILD_DIR WORK_DIR
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import unittest
import urllib.request

SOURCE_DIR = BUILD_DIR = WORK_DIR = None
BASE_PACKAGES = ["libc6", "libgcc-s1", "libstdc++6", "zlib1g"]  # in debian:12-slim
UID = 10001


def runtime_stage():
    """(packages, copies, user, entrypoint, cmd, healthcheck, volumes, stripped) of the
    Dockerfile's runtime stage; `stripped`: the build-tree files the build stage strips."""
    with open(os.path.join(SOURCE_DIR, "deploy/Dockerfile"), encoding="utf-8") as f:
        text = re.sub(r"\\\n", " ", f.read())
    build, stage = text.split("\nFROM ")[-2:]
    strip = re.search(r"&& strip ([^&\n]*)", build)
    stripped = {"/src/" + p for p in strip.group(1).split()} if strip else set()
    install = re.search(r"apt-get install (.*?)(&&|$)", stage, re.M).group(1)
    packages = [w for w in install.split() if not w.startswith("-")]
    copies = []
    for line in stage.splitlines():
        if line.startswith("COPY --from=build "):
            words = line.split()[2:]
            copies.append((words[:-1], words[-1]))
    user = re.search(r"^USER (\S+)", stage, re.M).group(1)
    entrypoint = json.loads(re.search(r"^ENTRYPOINT (\[.*\])", stage, re.M).group(1))
    cmd = json.loads(re.search(r"^CMD (\[.*\])", stage, re.M).group(1))
    health = json.loads(re.search(r"^HEALTHCHECK .*? CMD (\[.*\])", stage, re.M).group(1))
    volume = json.loads(re.search(r"^VOLUME (\[.*\])", stage, re.M).group(1))
    return packages, copies, user, entrypoint, cmd, health, volume, stripped


def build_path(image_path):
    """A path of the build stage (/src/...) in this checkout and build tree."""
    if image_path.startswith("/src/build/"):
        return os.path.join(BUILD_DIR, image_path[len("/src/build/"):])
    assert image_path.startswith("/src/"), image_path
    return os.path.join(SOURCE_DIR, image_path[len("/src/"):])


def stage_package(package, root):
    listing = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True)
    if listing.returncode != 0:
        raise AssertionError(f"{package} is not installed here: {listing.stderr.strip()}")
    for path in listing.stdout.splitlines():
        if not path.startswith("/") or path.startswith(("/usr/share/doc", "/usr/share/man")):
            continue
        target = root + path
        if os.path.islink(path):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if not os.path.lexists(target):
                os.symlink(os.readlink(path), target)
        elif os.path.isdir(path):
            os.makedirs(target, exist_ok=True)
        elif os.path.isfile(path):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(path, target)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def du(path):
    total = 0
    for directory, _, files in os.walk(path):
        for name in files:
            p = os.path.join(directory, name)
            if not os.path.islink(p):
                total += os.path.getsize(p)
    return total


class RuntimeRootfsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if shutil.which("unshare") is None or shutil.which("dpkg") is None:
            raise unittest.SkipTest("needs unshare and dpkg")
        (packages, copies, user, cls.entrypoint, cls.cmd, cls.health, cls.volume,
         stripped) = runtime_stage()
        cls.root = os.path.join(WORK_DIR, "rootfs")
        shutil.rmtree(cls.root, ignore_errors=True)
        os.makedirs(cls.root)
        # Merged /usr, as in debian:12-slim: /lib64 and /lib are links into /usr.
        for directory in ("bin", "sbin", "lib", "lib64"):
            os.makedirs(os.path.join(cls.root, "usr", directory), exist_ok=True)
            os.symlink(f"usr/{directory}", os.path.join(cls.root, directory))
        for package in BASE_PACKAGES + packages:
            stage_package(package, cls.root)
        for sources, target in copies:
            for source in sources:
                local = build_path(source)
                if not os.path.exists(local):
                    raise AssertionError(f"COPY {source}: {local} was not built")
                if os.path.isdir(local):
                    shutil.copytree(local, cls.root + target, dirs_exist_ok=True)
                else:
                    os.makedirs(cls.root + target, exist_ok=True)
                    shutil.copy2(local, cls.root + target)
                    if source in stripped:  # as the build stage does
                        subprocess.run(["strip", os.path.join(cls.root + target,
                                                              os.path.basename(local))],
                                       check=True)
        os.makedirs(os.path.join(cls.root, "etc"), exist_ok=True)
        with open(os.path.join(cls.root, "etc/passwd"), "w") as f:
            f.write(f"root:x:0:0:root:/root:/usr/sbin/nologin\n"
                    f"metaopt:x:{UID}:{UID}::/var/lib/metaopt:/usr/sbin/nologin\n")
        with open(os.path.join(cls.root, "etc/group"), "w") as f:
            f.write(f"root:x:0:\nmetaopt:x:{UID}:\n")
        with open(os.path.join(cls.root, "etc/ld.so.conf"), "w") as f:
            f.write("include /etc/ld.so.conf.d/*.conf\n")
        if shutil.which("ldconfig") or os.path.exists("/sbin/ldconfig"):
            subprocess.run([shutil.which("ldconfig") or "/sbin/ldconfig", "-r", cls.root],
                           check=True)
        for directory in cls.volume + ["/tmp", "/proc"]:
            os.makedirs(cls.root + directory, exist_ok=True)
        os.chmod(cls.root + "/tmp", 0o1777)
        cls.user = user
        cls.as_image_user = os.geteuid() == 0
        if cls.as_image_user:
            for directory in cls.volume:
                os.chown(cls.root + directory, UID, UID)
        cls.size = du(cls.root)
        print(f"runtime file system: {cls.size / 1e6:.0f} MB in {cls.root} "
              f"({len(packages)} packages of the Dockerfile, {len(BASE_PACKAGES)} of the base)",
              file=sys.stderr)

        cls.ports = {"grpc": free_port(), "metrics": free_port(), "http": free_port()}
        args = []
        for arg in cls.cmd:
            for flag, name in (("--listen", "grpc"), ("--metrics-listen", "metrics"),
                               ("--http-listen", "http")):
                if arg.startswith(flag + "="):
                    arg = f"{flag}=127.0.0.1:{cls.ports[name]}"
            args.append(arg)
        cls.log = open(os.path.join(WORK_DIR, "server.log"), "w+")
        cls.server = subprocess.Popen(cls.in_root(cls.entrypoint + args), stdout=cls.log,
                                      stderr=subprocess.STDOUT, env={"PATH": "/usr/bin"})

    @classmethod
    def in_root(cls, command):
        """command (image paths, PATH of the image) run chrooted into the staged tree."""
        # Own mount and PID namespaces with /proc mounted, as in a container (the server finds
        # its dashboard through /proc/self/exe); SIGTERM to unshare reaches the program.
        prefix = ["unshare", "--mount", "--pid", "--fork", "--kill-child=SIGTERM",
                  "--mount-proc", f"--root={cls.root}"]
        if os.geteuid() == 0:
            prefix += [f"--setuid={UID}", f"--setgid={UID}"]
        else:
            prefix[1:1] = ["--user", "--map-root-user"]
        program = command[0] if "/" in command[0] else f"/usr/local/bin/{command[0]}"
        return prefix + ["--wd=/", program] + command[1:]

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "server", None) is not None:
            cls.server.terminate()
            try:
                cls.server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                cls.server.kill()
            cls.log.close()

    def server_log(self):
        self.log.seek(0)
        return self.log.read()[-4000:]

    def ctl(self, *args, check=True):
        command = ["metaoptctl", f"--server=127.0.0.1:{self.ports['grpc']}", "--timeout=10"]
        result = subprocess.run(self.in_root(command + list(args)), capture_output=True,
                                text=True, timeout=60, env={"PATH": "/usr/bin"})
        if check:
            self.assertEqual(result.returncode, 0,
                             f"metaoptctl {args}: {result.stderr}\nserver:\n{self.server_log()}")
        return result

    def wait_healthy(self):
        health = [a.replace("127.0.0.1:50051", f"127.0.0.1:{self.ports['grpc']}")
                  for a in self.health]
        deadline = time.monotonic() + 60
        while True:
            self.assertIsNone(self.server.poll(), f"the server exited:\n{self.server_log()}")
            result = subprocess.run(self.in_root(health), capture_output=True, text=True,
                                    timeout=30, env={"PATH": "/usr/bin"})
            if result.returncode == 0:
                return result.stdout
            if time.monotonic() > deadline:
                self.fail(f"not healthy in 60 s: {result.stderr}\n{self.server_log()}")
            time.sleep(0.5)

    def test_1_healthcheck_passes_as_the_image_user(self):
        self.assertIn("SERVING", self.wait_healthy())
        self.assertEqual(self.user.split(":")[0], str(UID))
        if self.as_image_user:
            # The server is unshare's child (its PID namespace's first process).
            with open(f"/proc/{self.server.pid}/task/{self.server.pid}/children") as f:
                (child,) = f.read().split()
            with open(f"/proc/{child}/status") as f:
                self.assertRegex(f.read(), rf"\nUid:\s+{UID}\s")

    def test_2_one_study(self):
        self.wait_healthy()
        spec_dir = self.root + "/tmp/spec"
        os.makedirs(spec_dir, exist_ok=True)
        shutil.copy(os.path.join(SOURCE_DIR, "docs/examples/study_spec.json"), spec_dir)
        self.ctl("create-study", "--id", "rootfs", "--spec", "/tmp/spec/study_spec.json")
        trial = json.loads(self.ctl("suggest", "rootfs", "--client-id", "w").stdout)
        self.assertEqual(trial["trials"][0]["id"] if "trials" in trial else trial["id"], "1")
        self.ctl("observe", "rootfs", "--trial", "1", "--value", "0.5")
        study = json.loads(self.ctl("get-study", "rootfs").stdout)["study"]
        self.assertEqual(study["trialCount"], "1", study)
        models = self.ctl("list-models").stdout
        self.assertIn("deeppipe", models.lower(), "the bundled registry is not served")
        database = [a.split("=", 1)[1] for a in self.cmd if a.startswith("--db=")][0]
        self.assertTrue(any(database.startswith(v + "/") for v in self.volume))
        self.assertTrue(os.path.getsize(self.root + database) > 0)

    def test_3_dashboard_and_metrics(self):
        self.wait_healthy()
        page = urllib.request.urlopen(f"http://127.0.0.1:{self.ports['http']}/",
                                      timeout=10).read().decode()
        self.assertIn("assets/app.js", page, "the image's dashboard page is not served")
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{self.ports['metrics']}/metrics",
                                         timeout=10).read().decode()
        self.assertIn("metaopt_", metrics)

    def test_4_metaopt_train_runs(self):
        result = subprocess.run(self.in_root(["metaopt-train", "--help"]), capture_output=True,
                                text=True, timeout=30, env={"PATH": "/usr/bin"})
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("--kind", result.stdout)


def main():
    global SOURCE_DIR, BUILD_DIR, WORK_DIR
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    SOURCE_DIR, BUILD_DIR, WORK_DIR = sys.argv[1:4]
    os.makedirs(WORK_DIR, exist_ok=True)
    unittest.main(argv=[sys.argv[0], "-v"])


if __name__ == "__main__":
    main()
