package spec

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	doc := "# Title\n\n## 1. Introduction\n\n### 1.1 Conformance keywords\n" +
		"```\n## 9. Not a heading inside a fence\n```\n" +
		"## 4. Framing\n### 4.3 Request parsing rules for libraries\n" +
		"#### 4.3.1 too deep\n## Appendix A. Changes\n##5. no space\n"
	s, err := Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	for num, title := range map[string]string{
		"1": "Introduction", "1.1": "Conformance keywords", "4": "Framing",
		"4.3": "Request parsing rules for libraries",
	} {
		if got := s[num]; got != title {
			t.Errorf("section %s: got %q; want %q", num, got, title)
		}
	}
	for _, num := range []string{"9", "4.3.1", "5", "A"} {
		if s.Has(num) {
			t.Errorf("section %s: got present; want absent", num)
		}
	}
	if len(s) != 4 {
		t.Errorf("got %d sections %v; want 4", len(s), s)
	}
}

func TestLoadRepositorySpec(t *testing.T) {
	s, err := Load("../../../spec/PROTOCOL.md")
	if err != nil {
		t.Skipf("spec not found: %v", err)
	}
	for _, num := range []string{"1", "3.1", "4.3", "7.3", "10.4", "12"} {
		if !s.Has(num) {
			t.Errorf("spec lacks section %s", num)
		}
	}
}
