// Hostile job output renders as inert text: no dialog, no element made
// from it, no forged line, the window title untouched.

import { scenario, browser, submit, finished, rows, shot, assert, URL, until } from "./lib.mjs";

// Each printf line is one record; comments say what it tries.
const SCRIPT = [
  "printf '<script>alert(1)</script>\\n'",
  "printf '<img src=x onerror=\"alert(2)\">\\n'",
  "printf '<a href=\"javascript:alert(3)\">click</a> javascript:alert(4)\\n'",
  // OSC-8 hyperlink and an OSC window title.
  "printf '\\033]8;;javascript:alert(5)\\033\\\\OSC link\\033]8;;\\033\\\\\\n'",
  "printf '\\033]0;pwned title\\007after title\\n'",
  // A CR inside a line, a NUL, invalid UTF-8.
  "printf 'before CR\\rFORGED by CR\\n'",
  "printf 'NUL:\\000:end\\n'",
  "printf 'bad utf8: \\377\\376 end\\n'",
  // A workflow command whose message holds an escaped LF.
  "echo '::error::first%0Aforged by LF'",
  // Colours from the allowlist, an unknown SGR, a non-SGR CSI.
  "printf '\\033[31mred\\033[0m \\033[5;999mblink\\033[0m \\033[2Jafter erase\\n'",
  "echo '<style>*{display:none}</style>'",
].join("\n");

await scenario("hostile", async (step) => {
  const { id } = await submit({ name: "hostile", script: SCRIPT });
  const done = await finished(id);
  assert.equal(done.state, "succeeded", JSON.stringify(done));
  const n = done.log.records;
  assert.equal(n, 11, "one record per line");
  const b = await browser();
  const page = await b.newPage();
  await page.goto(`${URL}/jobs/${id}`);
  await until("every record in view", async () => (await rows(page)).filter((r) => r.seq).length === n);
  step("every record is one row");
  const shown = await rows(page);
  assert.deepEqual(shown.map((r) => r.seq), Array.from({ length: n }, (_, i) => i + 1), "no forged rows");
  const text = (seq) => shown.find((r) => r.seq === seq).text;
  assert.equal(text(1), "<script>alert(1)</script>");
  assert.equal(text(2), '<img src=x onerror="alert(2)">');
  assert.ok(text(3).startsWith('<a href="javascript:alert(3)">click</a>'));
  assert.equal(text(4), "\u241b]8;;javascript:alert(5)\u241b\\OSC link\u241b]8;;\u241b\\");
  assert.equal(text(5), "\u241b]0;pwned title\u2407after title");
  assert.equal(text(6), "before CR\u240dFORGED by CR");
  assert.equal(text(7), "NUL:\u2400:end");
  assert.equal(text(8), "bad utf8: \ufffd\ufffd end");
  assert.equal(text(9), "first\u240aforged by LF");
  assert.equal(text(10), "red blink \u241b[2Jafter erase");
  step("the text is shown as written, controls as visible symbols");
  const elements = await page.$$eval(".log-rows *", (els) =>
    els.map((e) => `${e.tagName}.${e.className}${e.tagName === "A" ? " " + e.getAttribute("href") : ""}`),
  );
  for (const e of elements) {
    const [tag] = e.split(".");
    assert.ok(["DIV", "SPAN", "A", "MARK"].includes(tag), `unexpected element ${e}`);
    if (tag === "A") assert.match(e, /^A\.ln #seq-\d+$/, "only line-number links");
  }
  const foreign = await page.$$eval("img, iframe, object, embed, style, link[rel=stylesheet]", (els) =>
    els.map((e) => e.outerHTML.slice(0, 80)),
  );
  assert.deepEqual(foreign.filter((h) => !h.includes("/ui/style.css")), [], "no element from job output");
  const scripts = await page.$$eval("script", (els) => els.map((e) => e.getAttribute("src")));
  assert.deepEqual(scripts, ["/ui/app.js"]);
  step("no element was created from the output");
  const red = await page.$$eval(".row[data-seq='10'] .tx span", (els) => els.map((e) => [e.className, e.textContent]));
  assert.deepEqual(red[0], ["a-f1", "red"], "SGR 31 becomes the red class");
  assert.ok(!red.some(([c]) => /blink|999/.test(c)), "unknown SGR codes give no class");
  assert.ok((await page.title()).endsWith("· joblog"), "the OSC title did not reach the window");
  // A dialog, had one opened, is reported by browser().
  await page.waitForTimeout(300);
  await page.goto(`${URL}/`);
  await until("the list", () => page.$(`tr[data-id='${id}']`));
  await shot(page, "hostile-list");
  await b.close();
});
