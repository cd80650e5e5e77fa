"""The fires of cron expressions by cronsim (the reference crontab
implementation healthchecks.io uses, with Debian cron's daylight saving
rules), for crates/core/tests/cron_reference.rs. Reads a JSON list of
{"cron", "zone", "start", "n"} (start in Unix seconds) on stdin; writes a
JSON list of each case's next n fires after start, in Unix seconds (null
where cronsim refuses the expression)."""

import json
import sys
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

from cronsim import CronSim, CronSimError

out = []
for case in json.load(sys.stdin):
    start = datetime.fromtimestamp(case["start"], timezone.utc).astimezone(ZoneInfo(case["zone"]))
    try:
        it = CronSim(case["cron"], start)
        out.append([int(next(it).timestamp()) for _ in range(case["n"])])
    except (CronSimError, StopIteration):
        out.append(None)
json.dump(out, sys.stdout)
