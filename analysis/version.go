package analysis

// Version names the statistics this package applies: the store keeps a
// run's verdicts, answers and gate as a cache tagged with the version
// that judged them, and history judges a run again when its cache is of
// another. Bump it (any new string) with every change that can change a
// verdict, an interval, an answer line, a gate or a variance component.
const Version = "2026-12-05.1"
