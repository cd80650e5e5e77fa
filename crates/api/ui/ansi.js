// Job output as DOM text: ANSI SGR colours become styled spans from an
// allowlist; every other escape sequence and control character is shown as
// a visible, inert symbol. Nothing here parses HTML: text goes into text
// nodes, styles into classes or CSSOM colour properties.

const ESC = "\x1b";

// Control characters as their Unicode "control picture" (␀ ␛ ␍ ␊ …), so a
// CR or LF inside a record cannot start another line and a NUL is seen.
export function inert(text) {
  // Tab stays a tab: it is layout, not a control the terminal acts on.
  return text.replace(/[\x00-\x08\x0a-\x1f\x7f]/g, (c) =>
    c === "\x7f" ? "\u2421" : String.fromCharCode(0x2400 + c.charCodeAt(0)),
  );
}

// The xterm 256-colour palette beyond the 16 themed colours, as CSS.
function palette256(n) {
  if (n < 232) {
    const i = n - 16;
    const steps = [0, 95, 135, 175, 215, 255];
    return `rgb(${steps[Math.floor(i / 36)]},${steps[Math.floor(i / 6) % 6]},${steps[i % 6]})`;
  }
  const v = 8 + (n - 232) * 10;
  return `rgb(${v},${v},${v})`;
}

function fresh() {
  return { bold: false, dim: false, italic: false, underline: false, inverse: false, strike: false, fg: null, bg: null };
}

// A colour from an SGR 38/48 tail: `5;N` or `2;R;G;B`. Returns
// [colour or null, parameters consumed].
function extended(params, i) {
  if (params[i] === 5 && params.length > i + 1) {
    const n = params[i + 1];
    if (n >= 0 && n <= 255) return [n < 16 ? { idx: n } : { css: palette256(n) }, 2];
    return [null, 2];
  }
  if (params[i] === 2 && params.length > i + 3) {
    const [r, g, b] = params.slice(i + 1, i + 4);
    if ([r, g, b].every((v) => v >= 0 && v <= 255)) return [{ css: `rgb(${r},${g},${b})` }, 4];
    return [null, 4];
  }
  return [null, params.length - i];
}

function applySgr(state, raw) {
  const params = raw === "" ? [0] : raw.split(/[;:]/).map((p) => (p === "" ? 0 : Number(p)));
  for (let i = 0; i < params.length; i++) {
    const p = params[i];
    if (!Number.isInteger(p)) continue;
    if (p === 0) Object.assign(state, fresh());
    else if (p === 1) state.bold = true;
    else if (p === 2) state.dim = true;
    else if (p === 3) state.italic = true;
    else if (p === 4) state.underline = true;
    else if (p === 7) state.inverse = true;
    else if (p === 9) state.strike = true;
    else if (p === 22) state.bold = state.dim = false;
    else if (p === 23) state.italic = false;
    else if (p === 24) state.underline = false;
    else if (p === 27) state.inverse = false;
    else if (p === 29) state.strike = false;
    else if (p >= 30 && p <= 37) state.fg = { idx: p - 30 };
    else if (p === 39) state.fg = null;
    else if (p >= 40 && p <= 47) state.bg = { idx: p - 40 };
    else if (p === 49) state.bg = null;
    else if (p >= 90 && p <= 97) state.fg = { idx: p - 90 + 8 };
    else if (p >= 100 && p <= 107) state.bg = { idx: p - 100 + 8 };
    else if (p === 38 || p === 48) {
      const [colour, used] = extended(params, i + 1);
      if (p === 38) state.fg = colour;
      else state.bg = colour;
      i += used;
    }
    // Anything else (blink, fonts, …) is not on the allowlist: ignored.
  }
}

// Splits a message into [{text, style}] runs. Escapes that are not SGR
// stay in the text (made inert later) so the reader sees them.
export function segments(message) {
  const out = [];
  if (message.indexOf(ESC) < 0) {
    out.push({ text: message, style: null });
    return out;
  }
  const state = fresh();
  let styled = false;
  let text = "";
  const flush = () => {
    if (text) out.push({ text, style: styled ? { ...state } : null });
    text = "";
  };
  let i = 0;
  while (i < message.length) {
    const c = message[i];
    if (c === ESC && message[i + 1] === "[") {
      // CSI: parameters, intermediates, one final byte.
      let j = i + 2;
      while (j < message.length && /[0-?]/.test(message[j])) j++;
      while (j < message.length && /[ -/]/.test(message[j])) j++;
      if (j < message.length && /[@-~]/.test(message[j])) {
        const body = message.slice(i + 2, j);
        if (message[j] === "m" && /^[0-9;:]*$/.test(body)) {
          flush();
          applySgr(state, body);
          styled = Object.entries(state).some(([, v]) => v);
          i = j + 1;
          continue;
        }
      }
      // Another CSI (cursor moves, erase, …) or a broken one: shown.
      text += c;
      i++;
      continue;
    }
    text += c;
    i++;
  }
  flush();
  return out;
}

// Appends a message's runs to `parent` as text nodes and spans. `mark`
// (optional, lower-case) highlights its occurrences as search matches.
export function render(parent, message, mark) {
  for (const { text, style } of segments(message)) {
    const shown = inert(text);
    let target = parent;
    if (style) {
      const span = document.createElement("span");
      const cls = [];
      if (style.bold) cls.push("a-b");
      if (style.dim) cls.push("a-d");
      if (style.italic) cls.push("a-i");
      if (style.underline) cls.push("a-u");
      if (style.strike) cls.push("a-s");
      let fg = style.fg;
      let bg = style.bg;
      if (style.inverse) [fg, bg] = [bg ?? { idx: "bg" }, fg ?? { idx: "fg" }];
      if (fg) {
        if (fg.css) span.style.color = fg.css;
        else cls.push(`a-f${fg.idx}`);
      }
      if (bg) {
        if (bg.css) span.style.backgroundColor = bg.css;
        else cls.push(`a-g${bg.idx}`);
      }
      span.className = cls.join(" ");
      parent.appendChild(span);
      target = span;
    }
    appendMarked(target, shown, mark);
  }
}

function appendMarked(parent, text, mark) {
  if (!mark) {
    parent.appendChild(document.createTextNode(text));
    return;
  }
  const lower = text.toLowerCase();
  let at = 0;
  for (;;) {
    const hit = lower.indexOf(mark, at);
    if (hit < 0) break;
    if (hit > at) parent.appendChild(document.createTextNode(text.slice(at, hit)));
    const m = document.createElement("mark");
    m.textContent = text.slice(hit, hit + mark.length);
    parent.appendChild(m);
    at = hit + mark.length;
  }
  if (at < text.length) parent.appendChild(document.createTextNode(text.slice(at)));
}

// The message as plain text (escapes and controls inert), for copying and
// the download's twin.
export function plain(message) {
  return inert(segments(message).map((s) => s.text).join(""));
}
