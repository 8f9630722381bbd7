// Reads the checks.json files of one run.sh invocation and prints one line
// per scenario run, then the ignored checks, warnings and a summary line.
// Exit status: 0 when no check failed (ignoring the entries of
// ignored-checks.tsv while the runner calls them "Not testable"), 1 otherwise.
//
// usage: node summarize.mjs RESULTS_DIR IGNORED_TSV SCENARIO@VERSION...
import { readFileSync, readdirSync, existsSync } from "node:fs";
import { join } from "node:path";

const [resultsDir, ignoredTsv, ...runs] = process.argv.slice(2);

const ignored = new Map();
for (const line of readFileSync(ignoredTsv, "utf8").split("\n")) {
  if (!line.trim() || line.startsWith("#")) continue;
  const [scenario, check, why] = line.split("\t");
  ignored.set(`${scenario}\t${check}`, why);
}

let failedRuns = 0;
let counts = { SUCCESS: 0, FAILURE: 0, WARNING: 0, SKIPPED: 0, INFO: 0, IGNORED: 0 };
const notes = [];
const warnings = [];
const failures = [];

for (const run of runs) {
  const [scenario, version] = run.split("@");
  const dir = join(resultsDir, version, scenario);
  const files = existsSync(dir)
    ? readdirSync(dir).map((d) => join(dir, d, "checks.json")).filter((f) => existsSync(f))
    : [];
  if (files.length !== 1) {
    failedRuns++;
    failures.push(`${version} ${scenario}: the runner wrote ${files.length} checks.json files (see ${dir}.log)`);
    console.log(`FAIL  ${version}  ${scenario}  (no result; see ${dir}.log)`);
    continue;
  }
  const checks = JSON.parse(readFileSync(files[0], "utf8"));
  let bad = 0;
  let tally = { SUCCESS: 0, FAILURE: 0, WARNING: 0, SKIPPED: 0, INFO: 0, IGNORED: 0 };
  for (const c of checks) {
    let status = c.status;
    const why = ignored.get(`${scenario}\t${c.id}`);
    if (status === "FAILURE" && why && String(c.errorMessage ?? "").startsWith("Not testable")) {
      status = "IGNORED";
      notes.push(`${version} ${scenario} ${c.id}: ${why}`);
    }
    tally[status] = (tally[status] ?? 0) + 1;
    counts[status] = (counts[status] ?? 0) + 1;
    if (status === "FAILURE") {
      bad++;
      failures.push(`${version} ${scenario} ${c.id}: ${c.errorMessage ?? c.description}`);
    } else if (status === "WARNING") {
      warnings.push(`${version} ${scenario} ${c.id}: ${c.errorMessage ?? c.description}`);
    }
  }
  if (bad > 0) failedRuns++;
  const parts = Object.entries(tally)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${n} ${k.toLowerCase()}`)
    .join(", ");
  console.log(`${bad > 0 ? "FAIL" : "PASS"}  ${version}  ${scenario.padEnd(42)} ${parts}`);
}

const section = (title, lines) => {
  if (lines.length === 0) return;
  console.log(`\n${title}:`);
  for (const l of lines) console.log(`  ${l}`);
};
section("ignored (need the runner's fixture tools)", notes);
section("warnings", warnings);
section("failures", failures);
console.log(
  `\n${runs.length - failedRuns} passed, ${failedRuns} failed` +
    ` (scenario runs; checks: ${counts.SUCCESS} success, ${counts.FAILURE} failure,` +
    ` ${counts.WARNING} warning, ${counts.SKIPPED} skipped, ${counts.INFO} info, ${counts.IGNORED} ignored)`,
);
process.exit(failedRuns > 0 ? 1 : 0);
