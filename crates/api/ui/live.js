// A page kept current by the job feed (`/api/v1/events`) instead of by
// polling: the page's data is read again when a change the feed tells of
// concerns it, and once more whenever the feed (re)opens, since changes
// made while it was away were never told. However busy the server, a page
// reads at most once per `every` ms. A ticker moves, once a second, what
// changes without the server (a running job's duration, "in 3 min").

import { stream } from "./api.js";

// `read()` reads the page's data; it is called only through `readNow` and
// `readSoon`, so the spacing counts every read. `concerns(change)`: whether
// a change (`{new, changed, reset}`) shows on the page. `onState(s)`: the
// feed's state, for a page that shows it. `since`: when the page's data was
// last read, if it already was.
export function live({ every, read, concerns, tick, onState, since = 0 }) {
  let lastRead = since;
  let timer = null;
  const readNow = () => {
    lastRead = Date.now();
    return read();
  };
  // Any number of asks before the read is due make one read.
  const readSoon = () => {
    if (timer) return;
    const wait = Math.max(0, lastRead + every - Date.now());
    timer = setTimeout(() => {
      timer = null;
      readNow();
    }, wait);
  };
  const feed = stream("/api/v1/events", {
    onEvent: (type, data) => {
      if (type === "jobs" && concerns(JSON.parse(data))) readSoon();
    },
    onState: (s) => {
      onState?.(s);
      if (s === "open") readSoon();
    },
  });
  const ticker = setInterval(tick, 1000);
  return {
    readNow,
    readSoon,
    close() {
      feed.close();
      clearInterval(ticker);
      clearTimeout(timer);
    },
  };
}
