#!/usr/bin/env python3
"""Server memory and Suggest cost per search-space size.

Starts metaopt-server on 127.0.0.1:0 with a temporary database, then for each
space size creates a study (S stages x A algorithms x P float parameters, no
catalogue), asks for one Suggest of each kind given, deletes the study, and
reads the server's resident memory (VmRSS) after each step. Prints a Markdown
table. Usage:

    bench/spec_memory.py --server build/server/metaopt-server \
        [--sizes 4x8x8,16x32x16,64x64x16] [--kinds gp,random]

Needs the Python stubs on PYTHONPATH (build/clients/python).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import grpc

from metaopt.v1 import optimizer_service_pb2 as pb
from metaopt.v1 import optimizer_service_pb2_grpc
from metaopt.v1 import study_pb2


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError("no VmRSS")


def make_spec(stages, algorithms, parameters, kind):
    spec = study_pb2.StudySpec()
    for s in range(stages):
        stage = spec.search_space.stages.add(name=f"s{s}")
        for a in range(algorithms):
            algorithm = stage.algorithms.add(name=f"a{a}")
            for p in range(parameters):
                parameter = algorithm.parameters.add(name=f"p{p}")
                parameter.float_domain.low = 0.0
                parameter.float_domain.high = 1.0
    spec.objective.name = "loss"
    spec.objective.goal = study_pb2.GOAL_MINIMIZE
    spec.algorithm.kind = study_pb2.AlgorithmKind.Value("ALGORITHM_KIND_" + kind.upper())
    spec.algorithm.model = "none"
    return spec


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="metaopt-server binary")
    parser.add_argument("--sizes", default="4x8x8,16x32x16,32x64x16,64x64x16,64x128x16")
    parser.add_argument("--kinds", default="random,gp")
    parser.add_argument("--observations", type=int, default=10,
                        help="trials observed before the timed Suggest")
    args = parser.parse_args()

    tmp = tempfile.mkdtemp(prefix="spec_memory.")
    log = open(os.path.join(tmp, "server.log"), "w+")
    server = subprocess.Popen(
        [args.server, "--listen=127.0.0.1:0", "--db=" + os.path.join(tmp, "db"),
         "--models=" + tmp, "--max-message-bytes=67108864"],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        port = None
        for _ in range(600):
            log.seek(0)
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", log.read())
            if m:
                port = m.group(1)
                break
            time.sleep(0.05)
        if port is None:
            sys.exit("metaopt-server did not start")
        channel = grpc.insecure_channel(
            f"127.0.0.1:{port}",
            options=[("grpc.max_send_message_length", 64 << 20),
                     ("grpc.max_receive_message_length", 64 << 20)])
        stub = optimizer_service_pb2_grpc.OptimizerServiceStub(channel)
        print("| space (stages x algorithms x floats) | parameters | spec bytes | kind | "
              "CreateStudy | RSS after create (MB) | Suggest after "
              f"{args.observations} observations | RSS after Suggest (MB) | RSS after delete (MB) |")
        print("|---|---|---|---|---|---|---|---|---|")
        base = rss_mb(server.pid)
        print(f"| (idle server) | | | | | {base:.0f} | | | |")
        n = 0
        for size in args.sizes.split(","):
            s, a, p = (int(x) for x in size.split("x"))
            for kind in args.kinds.split(","):
                n += 1
                spec = make_spec(s, a, p, kind)
                study_id = f"m{n}"
                start = time.monotonic()
                try:
                    stub.CreateStudy(pb.CreateStudyRequest(study_id=study_id, spec=spec),
                                     timeout=600)
                except grpc.RpcError as e:
                    print(f"| {s} x {a} x {p} | {s * a * p} | {spec.ByteSize()} | {kind} | "
                          f"{e.code().name}: {e.details()[:80]} | | | | |")
                    continue
                created = time.monotonic() - start
                after_create = rss_mb(server.pid)
                for i in range(args.observations):
                    (trial,) = stub.Suggest(pb.SuggestRequest(study_id=study_id, count=1),
                                            timeout=600).trials
                    stub.Observe(pb.ObserveRequest(study_id=study_id, trial_id=trial.id,
                                                   value=float(i % 7)), timeout=600)
                start = time.monotonic()
                stub.Suggest(pb.SuggestRequest(study_id=study_id, count=1), timeout=600)
                suggest = time.monotonic() - start
                after_suggest = rss_mb(server.pid)
                stub.DeleteStudy(pb.DeleteStudyRequest(study_id=study_id), timeout=600)
                after_delete = rss_mb(server.pid)
                print(f"| {s} x {a} x {p} | {s * a * p} | {spec.ByteSize()} | {kind} | "
                      f"{created:.2f} s | {after_create:.0f} | {suggest:.3f} s | "
                      f"{after_suggest:.0f} | {after_delete:.0f} |", flush=True)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
