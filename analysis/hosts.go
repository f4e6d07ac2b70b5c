package analysis

import (
	"fmt"
	"strings"

	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/internal/text"
)

// HostKind is what makes two hosts' numbers comparable: the CPU model and
// count, the memory, the kernel and the virtualisation; not the host's
// name, load or free memory. Nodes of one pool share a kind.
func HostKind(h host.Host) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s × %d, %d GiB, kernel %s", text.OrDash(h.CPU), h.NProc, (h.MemoryMB+512)/1024, text.OrDash(h.Kernel))
	if h.SMT != "" {
		fmt.Fprintf(&b, ", SMT %s", h.SMT)
	}
	if h.Hypervisor != "" {
		fmt.Fprintf(&b, ", VM (%s)", h.Hypervisor)
	}
	if h.Container != "" {
		fmt.Fprintf(&b, ", container (%s)", h.Container)
	}
	if h.CPUQuota > 0 {
		fmt.Fprintf(&b, ", quota %g CPUs", h.CPUQuota)
	}
	return b.String()
}

// mixedHosts says, when the shards ran on more than one kind of host,
// which shards ran on which: their configurations were measured on
// different machines, so numbers are comparable within a configuration
// (a shard holds whole configurations) but not across them.
func mixedHosts(shards []Shard) string {
	var kinds []string
	byKind := map[string][]string{}
	for _, sh := range shards {
		k := HostKind(sh.Plan.Host)
		if byKind[k] == nil {
			kinds = append(kinds, k)
		}
		name := sh.Plan.Shard
		if sh.Plan.Host.Hostname != "" {
			name += " on " + sh.Plan.Host.Hostname
		}
		byKind[k] = append(byKind[k], name)
	}
	if len(kinds) < 2 {
		return ""
	}
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s: %s", strings.Join(byKind[k], ", "), k)
	}
	return fmt.Sprintf("mixed host kinds: the shards ran on %d kinds of host (%s); compare configurations of different shards with care", len(kinds), strings.Join(parts, "; "))
}
