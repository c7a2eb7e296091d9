package main

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
)

// keyformats.json holds the plugin's formats of the volume_context values that name storage (iSCSI and NVMe names,
// WWIDs, WWPNs, portals, LUN numbers), rendered from the Java class dev.blocknode.transport.KeyFormats by its
// KeyFormatsUnitTest, which fails when this copy is stale (make docs rewrites it). The validator checks a PV's
// attributes with the plugin's own patterns rather than with patterns of its own; the cases both sides run
// (testdata/keyformats-cases.tsv) hold the two regular-expression engines to the same answers.
//
//go:embed keyformats.json
var keyFormatsJSON []byte

type keyFormat struct {
	Name        string `json:"name"`
	Noun        string `json:"noun"`
	Pattern     string `json:"pattern"`
	MaxLength   int    `json:"maxLength"`
	MaxValue    string `json:"maxValue"`
	AppliesWhen string `json:"appliesWhen"`
	Description string `json:"description"`

	re, applies *regexp.Regexp
	max         *big.Int
}

var keyFormats = loadKeyFormats(keyFormatsJSON)

func loadKeyFormats(data []byte) map[string]*keyFormat {
	var table struct {
		Formats []*keyFormat `json:"formats"`
	}
	if err := json.Unmarshal(data, &table); err != nil {
		panic(fmt.Sprintf("keyformats.json: %v", err))
	}
	formats := map[string]*keyFormat{}
	for _, f := range table.Formats {
		f.re = regexp.MustCompile(`^(?:` + f.Pattern + `)$`)
		if f.AppliesWhen != "" {
			f.applies = regexp.MustCompile(`^(?:` + f.AppliesWhen + `)`)
		}
		if f.MaxValue != "" {
			max, ok := new(big.Int).SetString(f.MaxValue, 10)
			if !ok {
				panic(fmt.Sprintf("keyformats.json: %s's maxValue %q is not a number", f.Name, f.MaxValue))
			}
			f.max = max
		}
		formats[f.Name] = f
	}
	return formats
}

// format is the named format; a name the table lacks is the validator's own mistake.
func format(name string) *keyFormat {
	f, ok := keyFormats[name]
	if !ok {
		panic("keyformats.json has no format " + name)
	}
	return f
}

// accepts says whether value is of the format, as KeyFormats.Format.accepts does in the plugin.
func (f *keyFormat) accepts(value string) bool {
	if f.applies != nil && !f.applies.MatchString(value) {
		return true
	}
	if f.MaxLength > 0 && len(value) > f.MaxLength {
		return false
	}
	if !f.re.MatchString(value) {
		return false
	}
	if f.max != nil {
		n, ok := new(big.Int).SetString(value, 10)
		return ok && n.Cmp(f.max) <= 0
	}
	return true
}
