// Package version names the abtest binary: the version make links in,
// else the VCS revision Go recorded in the binary, else "dev".
package version

import "runtime/debug"

// Of is linked when make set it (anything but "dev") or there is no
// build info; else the VCS revision (12 characters, -dirty when the tree
// was modified), else the module version, else linked.
func Of(linked string, bi *debug.BuildInfo, ok bool) string {
	if linked != "dev" || !ok {
		return linked
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
		return linked
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// Binary is Of for this binary's build info.
func Binary(linked string) string {
	bi, ok := debug.ReadBuildInfo()
	return Of(linked, bi, ok)
}
