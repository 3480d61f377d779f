package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// block is one fenced code block of a Markdown file (CommonMark §4.5): its
// info string's language and attributes, and its text.
type block struct {
	file string
	line int    // 1-based line of the opening fence
	lang string // the info string's first word
	info string // the rest of the info string: attributes (parseAttrs)
	text string
}

func (b *block) where() string { return b.file + ":" + strconv.Itoa(b.line) }

// parseBlocks returns the fenced code blocks of a Markdown file. A fence is
// three or more backticks or tildes, indented at most three spaces; the block
// ends at a fence of the same character at least as long, and the opening
// fence's indentation is removed from its lines. An unclosed fence is an
// error: CommonMark would run it to the end of the file, which is never what
// a README meant.
func parseBlocks(file string, src []byte) ([]block, error) {
	var blocks []block
	lines := strings.Split(strings.ReplaceAll(string(src), "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		indent, fence, info, ok := openingFence(lines[i])
		if !ok {
			continue
		}
		lang, rest, _ := strings.Cut(info, " ")
		b := block{file: file, line: i + 1, lang: lang, info: rest}
		var text bytes.Buffer
		closed := false
		for i++; i < len(lines); i++ {
			if isClosingFence(lines[i], fence) {
				closed = true
				break
			}
			text.WriteString(dedent(lines[i], indent))
			text.WriteByte('\n')
		}
		if !closed {
			return nil, fmt.Errorf("%s:%d: the code block is not closed", file, b.line)
		}
		b.text = text.String()
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// openingFence recognises a fence line and returns its indentation, the fence
// itself (```, ~~~~, ...) and the info string after it.
func openingFence(line string) (indent int, fence, info string, ok bool) {
	rest := strings.TrimLeft(line, " ")
	indent = len(line) - len(rest)
	if indent > 3 || len(rest) < 3 || (rest[0] != '`' && rest[0] != '~') {
		return 0, "", "", false
	}
	n := len(rest) - len(strings.TrimLeft(rest, rest[:1]))
	if n < 3 {
		return 0, "", "", false
	}
	info = strings.TrimSpace(rest[n:])
	if rest[0] == '`' && strings.Contains(info, "`") {
		return 0, "", "", false // inline code, not a fence (CommonMark §4.5)
	}
	return indent, rest[:n], info, true
}

func isClosingFence(line, fence string) bool {
	rest := strings.TrimLeft(line, " ")
	if len(line)-len(rest) > 3 || !strings.HasPrefix(rest, fence) {
		return false
	}
	return strings.TrimSpace(strings.TrimLeft(rest, fence[:1])) == ""
}

// dedent removes up to n leading spaces.
func dedent(line string, n int) string {
	for n > 0 && strings.HasPrefix(line, " ") {
		line = line[1:]
		n--
	}
	return line
}

// parseAttrs reads the key=value attributes after an info string's language;
// a value may be double-quoted to hold spaces: sh skip="needs Docker".
func parseAttrs(info string) (map[string]string, error) {
	attrs := map[string]string{}
	for rest := strings.TrimSpace(info); rest != ""; rest = strings.TrimSpace(rest) {
		key, after, ok := strings.Cut(rest, "=")
		if !ok || key == "" || strings.ContainsAny(key, " \"") {
			return nil, fmt.Errorf("info string %q: want key=value attributes", info)
		}
		var value string
		if strings.HasPrefix(after, `"`) {
			end := strings.Index(after[1:], `"`)
			if end < 0 {
				return nil, fmt.Errorf("info string %q: unclosed quote", info)
			}
			value, rest = after[1:1+end], after[2+end:]
		} else {
			value, rest, _ = strings.Cut(after, " ")
		}
		if _, dup := attrs[key]; dup {
			return nil, fmt.Errorf("info string %q: %s given twice", info, key)
		}
		attrs[key] = value
	}
	return attrs, nil
}
