package analysis

// One way a number that is not finite reaches JSON: null. encoding/json
// refuses NaN and ±Inf, and the report has them on purpose (no interval
// from one value, no change from a zero baseline). Every JSON the
// analysis writes goes through marshalJSON: JSON v2 (go-json-experiment,
// the toolchain's encoding/json/v2 behind GOEXPERIMENT) with a float64
// marshaler that writes a number that is not finite as null, and v2's
// omitempty, which leaves out a field whose JSON is empty — null
// included, so a NaN tagged omitempty is left out while a finite 0 is
// written (a Δ of exactly 0 is an answer); omitzero leaves out 0.
// Otherwise the output is encoding/json's (sorted map keys, nil as null,
// HTML escaped).

import (
	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

var finiteOpts = json.JoinOptions(
	jsonv1.DefaultOptionsV1(),
	jsonv1.OmitEmptyWithLegacySemantics(false),
	json.WithMarshalers(json.MarshalToFunc(func(enc *jsontext.Encoder, x float64) error {
		if isFinite(x) {
			return json.SkipFunc
		}
		return enc.WriteToken(jsontext.Null)
	})),
)

// marshalJSON is v as JSON, numbers that are not finite as null.
func marshalJSON(v any, opts ...json.Options) ([]byte, error) {
	return json.Marshal(v, append([]json.Options{finiteOpts}, opts...)...)
}
