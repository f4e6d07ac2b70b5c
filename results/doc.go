// Package results is the schema of a results directory and the one place
// that reads and writes it: plan.json (the plan, with the metric
// definitions it was run under), cells.jsonl (one fsynced line per
// measured cell: the truth) and cells/<cell-id>/ (raw artefacts).
//
// It is a leaf: it imports nothing of abtest that runs a process, so the
// analysis, the store and the dashboard read results copied from another
// host with the same code the runner writes them with.
//
// Vocabularies are types with a fixed set of values (Status, Direction,
// Tier, Verdict): nothing is inferred from a unit string or matched in a
// library's warning text.
//
// Schema versions: 1 (abtest before the results package: metric
// definitions as {higher_is_better, min_effect_pct}) is read and upgraded
// in memory; 2 is written. A plan newer than this binary is refused with
// one line naming both versions.
package results
