// The downloads of a job's log: the plain text (one line per record) and
// JSON lines (one record per line, with seq, stream, message and fields,
// as GET /api/v1/jobs/{id}/log gives them), both offered on its page.

import { scenario, browser, submit, finished, api, assert, URL, until } from "./lib.mjs";
import { readFileSync } from "node:fs";

const SCRIPT = [
  "echo plain",
  "echo '::warning file=a.py,line=3::check this'",
  "printf '\\033[31mred\\033[0m\\n'",
  "echo '::error::it broke'",
  "echo oops >&2",
].join("\n");

export async function downloads(page, id, records) {
  await until("the download links", () => page.$("#download-jsonl"));
  assert.equal((await page.textContent("#download")).trim(), "Download log");
  assert.equal((await page.textContent("#download-jsonl")).trim(), "Download JSON lines");

  const [text] = await Promise.all([page.waitForEvent("download"), page.click("#download")]);
  assert.equal(text.suggestedFilename(), `job-${id}.log`);
  const plain = readFileSync(await text.path(), "utf8");
  assert.equal(plain.split("\n").length - 1, records.length, "a line per record");

  const [json] = await Promise.all([page.waitForEvent("download"), page.click("#download-jsonl")]);
  assert.equal(json.suggestedFilename(), `job-${id}.jsonl`);
  const body = readFileSync(await json.path(), "utf8");
  assert.ok(body.endsWith("\n"));
  const lines = body.slice(0, -1).split("\n").map((l) => JSON.parse(l));
  assert.equal(lines.length, records.length, "a JSON object per record");
  for (const [i, r] of lines.entries()) {
    assert.equal(typeof r.seq, "number");
    assert.equal(typeof r.stream, "string");
    assert.equal(typeof r.message, "string");
    assert.deepEqual(r, records[i], `record ${i + 1} as the API gives it`);
  }
  return lines;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await scenario("download", async (step) => {
    const { id } = await submit({ name: "downloads", script: SCRIPT });
    await finished(id);
    const { records } = await api("GET", `/api/v1/jobs/${id}/log`);
    const b = await browser();
    const page = await b.newPage();
    await page.goto(`${URL}/jobs/${id}`);
    const lines = await downloads(page, id, records);
    assert.deepEqual(
      lines.map((r) => r.stream),
      ["output", "warning", "output", "error", "error"],
    );
    assert.deepEqual(lines[1].fields, { file: "a.py", line: 3 });
    assert.equal(lines[2].message, "\u001b[31mred\u001b[0m", "ANSI kept as written");
    step("both downloads offered: the plain text, and JSON lines with seq, stream, message and fields");
    await b.close();
  });
}
