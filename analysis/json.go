package analysis

import (
	"encoding/json"
	"io"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/pgabtest/abtest/results"
)

// SchemaVersion is the format of report.json. Version 2 added the field
// itself, configurations as objects beside their IDs, and [] for every
// empty list; a report without schema_version is version 1.
const SchemaVersion = 2

// Configuration is a configuration's axes beside its ID, so that jq
// selects on them (.rows[] | select(.configuration.clients == 64))
// without parsing "churn/c64/cpuall/pgss.max=5000".
type Configuration struct {
	Workload string `json:"workload"`
	Clients  int    `json:"clients"`
	// CPUs is the server's CPUs; 0: not pinned.
	CPUs     int               `json:"cpus"`
	Settings map[string]string `json:"settings"`
}

type jsonRow struct {
	Config        string        `json:"config"`
	Configuration Configuration `json:"configuration"`
	Metric        string        `json:"metric"`
	Stats         []Stat        `json:"stats"`
}

type jsonChange struct {
	Change
	Configuration Configuration `json:"configuration"`
}

type jsonIncomplete struct {
	Incomplete
	Configuration Configuration `json:"configuration"`
}

// jsonReport is the report as report.json has it: the Report's fields,
// with these shadowing its lists of the same names.
type jsonReport struct {
	SchemaVersion int `json:"schema_version"`
	// Plan is encoded by encoding/json, as plan.json is.
	Plan jsontext.Value `json:"plan"`
	*Report
	Incomplete  []jsonIncomplete `json:"incomplete"`
	Rows        []jsonRow        `json:"rows"`
	Changes     []jsonChange     `json:"changes"`
	Regressions []jsonChange     `json:"regressions"`
}

// WriteJSON writes the report model (schema SchemaVersion). Every list
// is a list, [] when empty: `jq '.warnings[]'` works on any report.
// The baseline's statistics carry no change, interval of the change or
// p; numbers that are undefined are null, with the reason under
// "undefined".
func (r *Report) WriteJSON(w io.Writer) error {
	configs := map[string]Configuration{}
	for _, c := range r.Plan.Configs {
		configs[c.ID()] = configuration(c)
	}
	cp := *r
	out := jsonReport{SchemaVersion: SchemaVersion, Report: &cp}
	plan := *r.Plan
	plan.Cells = nonNil(plan.Cells)
	plan.Commits = nonNil(plan.Commits)
	plan.Configs = nonNil(plan.Configs)
	plan.Metrics = nonNil(plan.Metrics)
	plan.Options.Workloads = nonNil(plan.Options.Workloads)
	plan.Options.Clients = nonNil(plan.Options.Clients)
	plan.Options.CPUs = nonNil(plan.Options.CPUs)
	plan.Options.Settings = nonNil(plan.Options.Settings)
	for _, in := range r.Incomplete {
		out.Incomplete = append(out.Incomplete, jsonIncomplete{in, configs[in.Config]})
	}
	for _, row := range r.Rows {
		out.Rows = append(out.Rows, jsonRow{row.Config, configs[row.Config], row.Metric, row.Stats})
	}
	change := func(c Change) jsonChange {
		return jsonChange{c, configs[c.Config]}
	}
	for _, c := range r.Changes {
		out.Changes = append(out.Changes, change(c))
	}
	for _, c := range r.Regressions {
		out.Regressions = append(out.Regressions, change(c))
	}
	planJSON, err := json.Marshal(&plan)
	if err != nil {
		return err
	}
	out.Plan = planJSON
	// Every list is a list and every map an object, [] and {} when
	// empty (v1's nil as null is kept elsewhere: a plan's own JSON).
	data, err := marshalJSON(out, jsontext.WithIndent("  "), jsonv2.FormatNilSliceAsNull(false), jsonv2.FormatNilMapAsNull(false))
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

func configuration(c results.Config) Configuration {
	return Configuration{Workload: c.Workload, Clients: c.Clients, CPUs: c.CPUs, Settings: c.Settings}
}

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}
