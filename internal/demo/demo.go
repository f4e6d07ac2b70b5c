// Package demo holds what `abtest demo` ships inside the binary: the patch
// it benchmarks against its base commit.
package demo

import _ "embed"

// PatchName is the file name the demo patch is written under.
const PatchName = "usage_dealloc_percent.patch"

// Patch raises pg_stat_statements' USAGE_DEALLOC_PERCENT from 5 to 20
// (fewer, bigger evictions). It applies to PostgreSQL 13 through 18.
//
//go:embed usage_dealloc_percent.patch
var Patch []byte
