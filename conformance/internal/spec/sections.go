// Package spec reads the section numbers of spec/PROTOCOL.md, so that every
// check can prove the section it cites exists.
package spec

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// Sections maps a section number ("4", "4.3") to its heading title.
type Sections map[string]string

// heading matches "## 4. Framing" and "### 4.3 Request parsing rules".
var heading = regexp.MustCompile(`^(#{2,3})\s+(\d+(?:\.\d+)?)\.?\s+(.*?)\s*$`)

// Parse reads Markdown and returns the numbered level-2 and level-3
// headings. Lines inside fenced code blocks are not headings.
func Parse(r io.Reader) (Sections, error) {
	s := Sections{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	fenced := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		num := m[2]
		// "## 4.3" or "### 4" would be a mislevelled heading; keep the
		// number anyway, the level is style, the number is the reference.
		s[num] = m[3]
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

// Load parses the spec file at path.
func Load(path string) (Sections, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("spec: %v", err)
	}
	defer f.Close()
	s, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("spec: %s: %v", path, err)
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("spec: %s: no numbered headings", path)
	}
	return s, nil
}

// Has reports whether section num is a heading.
func (s Sections) Has(num string) bool {
	_, ok := s[num]
	return ok
}
