// The statistics over rounds and the text tables of the benchmark summaries
// (bench/summarize.mjs for stdio, bench/http/summarize.mjs for HTTP): each
// number is shown as its median with the min–max over rounds.

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** {median, min, max, n} of the finite numbers in xs (others are skipped); null if none. */
export const stats = (xs) => {
  xs = xs.filter((x) => typeof x === "number" && Number.isFinite(x));
  return xs.length ? { median: median(xs), min: Math.min(...xs), max: Math.max(...xs), n: xs.length } : null;
};

// {====== the tables
export const fmtNum = (x) => (x >= 100 ? Math.round(x).toString() : x >= 10 ? x.toFixed(1) : x.toFixed(2));
/** "median (min–max)" of a stats() result, "—" for null. */
export const fmtStats = (st, f = fmtNum) => (st ? `${f(st.median)} (${f(st.min)}–${f(st.max)})` : "—");
export const fmtRatio = (x) => (x >= 10 ? x.toFixed(1) : x >= 0.1 ? x.toFixed(2) : x.toFixed(3));

/** Prints header and rows (arrays of strings) as aligned columns on stdout. */
export const printTable = (header, rows) => {
  const colWidth = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) => cells.map((c, i) => c.padEnd(colWidth[i])).join("  ").trimEnd();
  console.log(line(header));
  console.log(line(colWidth.map((w) => "-".repeat(w))));
  for (const r of rows) console.log(line(r));
};
// }======
