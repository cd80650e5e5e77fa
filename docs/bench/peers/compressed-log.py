#!/usr/bin/env python3
"""A finished job's whole log, compressed, from two servers side by side.

Each round runs one `curl --compressed` per server that fetches the log N
times on one keep-alive connection and prints each request's time; the
servers take turns going first. Prints each server's median, p90 and the
encoding and size it answered with. Used for joblog beside Cronicle in
docs/benchmarks.md ("Compressed retrieval beside Cronicle"):

    compressed-log.py --rounds 5 --requests 300 \\
        joblog  'http://127.0.0.1:7999/api/v1/jobs/1/log/text' \\
        cronicle 'http://127.0.0.1:3012/api/app/get_job_log?id=…&session_id=…'

Extra curl arguments for every request (a token header) go after `--`.
"""

import argparse
import statistics
import subprocess
import sys


def run(url, n, extra):
    args = ["curl", "-s", "--compressed", "--fail"] + extra
    for _ in range(n):
        args += ["-o", "/dev/null", "-w", "%{time_total} %{size_download}\\n", url]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    rows = [line.split() for line in out.splitlines() if line.strip()]
    if len(rows) != n:
        sys.exit(f"{url}: {len(rows)} answers of {n}")
    return [float(t) * 1000.0 for t, _ in rows], int(rows[-1][1])


def encoding(url, extra):
    head = subprocess.run(
        ["curl", "-s", "--compressed", "-D", "-", "-o", "/dev/null"] + extra + [url],
        check=True, capture_output=True, text=True,
    ).stdout
    for line in head.splitlines():
        if line.lower().startswith("content-encoding:"):
            return line.split(":", 1)[1].strip()
    return "identity"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--requests", type=int, default=300)
    p.add_argument("servers", nargs="+", help="LABEL URL pairs, then -- and curl arguments")
    a = p.parse_args()
    servers, extra = a.servers, []
    if "--" in servers:
        at = servers.index("--")
        servers, extra = servers[:at], servers[at + 1:]
    if len(servers) % 2:
        sys.exit("give LABEL URL pairs")
    pairs = list(zip(servers[0::2], servers[1::2]))
    times = {label: [] for label, _ in pairs}
    size = {}
    for r in range(a.rounds):
        order = pairs[r % len(pairs):] + pairs[: r % len(pairs)]
        for label, url in order:
            t, size[label] = run(url, a.requests, extra)
            times[label] += t
            print(f"round {r + 1}, {label}: median {statistics.median(t):.3f} ms", file=sys.stderr)
    print("| Server | Encoding | Bytes | Median (ms) | p90 (ms) | Requests |")
    print("|---|---|---:|---:|---:|---:|")
    for label, url in pairs:
        t = sorted(times[label])
        p90 = t[int(0.9 * (len(t) - 1))]
        print(f"| {label} | {encoding(url, extra)} | {size[label]} | "
              f"{statistics.median(t):.3f} | {p90:.3f} | {len(t)} |")


if __name__ == "__main__":
    main()
