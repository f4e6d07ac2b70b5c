package results

// Role is what a verdict row is to its commit's answer, as the
// analysis' summary counts it (analysis.Stat.Role, analysis.Summary.Count):
// a tested row's verdict is in the headline counts, the others are said
// apart or not at all. The store keeps it beside each verdict so that
// the dashboard counts as the report does.
type Role string

const (
	// RoleGated: a gated test that was run (a configuration's primary, a
	// secondary tested behind a primary that changed, a counter): its
	// verdict is counted in the headline.
	RoleGated Role = "gated"
	// RoleUntested: a secondary gated metric not tested because its
	// configuration's primary was not called better or worse; counted
	// apart as secondary tests not run.
	RoleUntested Role = "untested"
	// RoleReportOnly: a descriptive or report-only metric; only its
	// higher, lower and incomplete verdicts are counted.
	RoleReportOnly Role = "report-only"
	// RoleMirrored: judged by the metric it is a function of ("as tps"):
	// the same answer again, never counted.
	RoleMirrored Role = "mirrored"
)
