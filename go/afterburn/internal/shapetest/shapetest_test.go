package shapetest

import "testing"

// The matcher of conformance/shapes/README.md: a subset, "$any", "$absent", arrays exact.
func TestSubset(t *testing.T) {
	for _, tt := range []struct {
		want, got string
		match     bool
	}{
		{`{"a":1}`, `{"a":1,"b":2}`, true},
		{`{"a":1}`, `{"a":2}`, false},
		{`{"a":1}`, `{"a":"1"}`, false},
		{`{"a":1}`, `{}`, false},
		{`{"a":{"b":"x"}}`, `{"a":{"b":"x","c":1}}`, true},
		{`{"a":{"b":"x"}}`, `{"a":{"c":1}}`, false},
		{`{"a":[1,2]}`, `{"a":[1,2]}`, true},
		{`{"a":[1,2]}`, `{"a":[1,2,3]}`, false},
		{`{"a":[1,2]}`, `{"a":[2,1]}`, false},
		{`{"a":"$any"}`, `{"a":null}`, true},
		{`{"a":"$any"}`, `{}`, false},
		{`{"a":"$absent"}`, `{}`, true},
		{`{"a":"$absent"}`, `{"a":null}`, true},
		{`{"a":"$absent"}`, `{"a":""}`, false},
		{`{"a":false}`, `{"a":false}`, true},
		{`{"a":false}`, `{}`, false},
		{`"s"`, `"s"`, true},
	} {
		d := Subset([]byte(tt.want), []byte(tt.got))
		if (d == "") != tt.match {
			t.Errorf("Subset(%s, %s) = %q; want a match: %v", tt.want, tt.got, d, tt.match)
		}
	}
}
