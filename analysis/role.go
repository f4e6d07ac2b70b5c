package analysis

import (
	"strings"

	"github.com/pgabtest/abtest/results"
)

// Role is what the row is to its commit's answer: mirrored (its Method
// is "as" another metric), untested (Behind), gated, or report-only.
func (s Stat) Role() results.Role {
	switch {
	case strings.HasPrefix(s.Method, "as "):
		return results.RoleMirrored
	case s.Behind:
		return results.RoleUntested
	case s.Gated:
		return results.RoleGated
	}
	return results.RoleReportOnly
}

// Count adds a row's verdict v in role to the summary, as the report
// counts it: a gated row in the headline, an untested one as Behind, a
// report-only one only when higher, lower (said apart) or incomplete, a
// mirrored one never. The dashboard counts stored rows through it.
func (s *Summary) Count(role results.Role, v results.Verdict) {
	switch role {
	case results.RoleMirrored:
		return
	case results.RoleUntested:
		s.Behind++
		return
	case results.RoleReportOnly:
		if v != results.Higher && v != results.Lower && v != results.Incomplete {
			return
		}
	}
	switch v {
	case results.Better:
		s.Better++
	case results.Worse:
		s.Worse++
	case results.Higher:
		s.Higher++
	case results.Lower:
		s.Lower++
	case results.Same:
		s.Same++
	case results.Unknown:
		s.Unknown++
	case results.Incomplete:
		s.Incomplete++
	}
}
