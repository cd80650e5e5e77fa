"""Schemathesis hooks for .ci/fuzz-api: how to make values of the string
formats openapi.json uses that JSON Schema cannot spell — a cron
expression (`cron`), an IANA time zone name (`iana-time-zone`) and a
bound of the job list (`time-bound`: `24h` back, or a time) — so
that the fuzzer's "valid" requests are valid, and a refusal of one is a
real defect (the document looser than the server)."""

import schemathesis
from hypothesis import strategies as st

ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo",
         "Australia/Sydney", "America/Sao_Paulo", "Africa/Cairo", "Pacific/Apia"]


def field(low, high):
    number = st.integers(low, high).map(str)
    rng = st.tuples(st.integers(low, high), st.integers(low, high)).map(
        lambda t: f"{min(t)}-{max(t)}")
    step = st.integers(1, high - low).map(lambda s: f"*/{s}")
    listed = st.lists(st.integers(low, high), min_size=1, max_size=3, unique=True).map(
        lambda xs: ",".join(map(str, sorted(xs))))
    return st.one_of(st.just("*"), number, rng, step, listed)


CRON = st.one_of(
    st.sampled_from(["@hourly", "@daily", "@weekly", "@monthly", "@yearly", "@midnight",
                     "30 2 * * *", "0 9 * * 1-5", "*/15 * * * *"]),
    # Day of month up to 28: every month has it, so the expression fires.
    st.tuples(field(0, 59), field(0, 23), field(1, 28), field(1, 12), field(0, 6)).map(" ".join),
)

# A time bound of the job list: a duration back from now, or a time.
TIME_BOUND = st.one_of(
    st.sampled_from(["30m", "24h", "7d", "2026-11-22", "2026-11-22T10:00:00Z",
                     "2026-11-22T11:00:00+01:00"]),
    st.integers(1, 10_000).map(lambda n: f"{n}m"),
)

schemathesis.openapi.format("cron", CRON)
schemathesis.openapi.format("time-bound", TIME_BOUND)
schemathesis.openapi.format("iana-time-zone", st.sampled_from(ZONES))
