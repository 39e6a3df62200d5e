// Package docexamples reads the command examples and the relative links
// out of the project's markdown (README.md and docs/*.md), so that tests
// can hold them to the real command trees and files: a renamed flag or a
// moved page fails a test naming the file and line, instead of leaving a
// stale example for a reader to find.
package docexamples

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Files returns README.md and every docs/*.md under root, sorted.
func Files(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	sort.Strings(docs)
	return append([]string{filepath.Join(root, "README.md")}, docs...), nil
}

// Command is one command line of a fenced shell block.
type Command struct {
	File string // as passed to Commands
	Line int    // 1-based, of the command's first line
	Text string // the line as written, continuations joined
	// Words is the line split as the shell would, quotes removed and
	// nothing expanded, without leading NAME=value assignments and
	// without a trailing comment.
	Words []string
}

func (c Command) String() string { return fmt.Sprintf("%s:%d: %s", c.File, c.Line, c.Text) }

// InlineCommands returns the inline code spans of the table rows of file
// (outside fenced blocks) that are a command line starting with one of names and hold no
// alternatives or ellipses (`dynafold design workbench|cdk`, `…`), as in
// a table of commands.
func InlineCommands(file string, names ...string) ([]Command, error) {
	lines, err := readLines(file)
	if err != nil {
		return nil, err
	}
	var out []Command
	inBlock := false
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock || !strings.HasPrefix(line, "|") {
			continue
		}
		for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
			text := m[1]
			if strings.ContainsAny(text, "|…<>") {
				continue
			}
			words := Split(text)
			for _, n := range names {
				if len(words) > 1 && words[0] == n {
					out = append(out, Command{File: file, Line: i + 1, Text: text, Words: words})
				}
			}
		}
	}
	return out, nil
}

var inlineCode = regexp.MustCompile("`([^`]+)`")

// shellInfo is the info strings of fenced blocks that hold commands. A
// block without one holds commands too (and output, whose lines rarely
// start with a command's name followed by a space).
var shellInfo = map[string]bool{"": true, "sh": true, "shell": true, "bash": true, "console": true}

// Commands returns the command lines of the fenced shell blocks of file
// whose first word (after assignments and a "$ " prompt) is one of names.
func Commands(file string, names ...string) ([]Command, error) {
	lines, err := readLines(file)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []Command
	inBlock, shell := false, false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if inBlock {
				inBlock = false
				continue
			}
			inBlock = true
			shell = shellInfo[strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))]
			continue
		}
		if !inBlock || !shell {
			continue
		}
		start := i
		text := strings.TrimPrefix(trimmed, "$ ")
		// A line ending in a backslash goes on in the next one.
		for strings.HasSuffix(stripComment(text), `\`) && i+1 < len(lines) {
			text = strings.TrimSuffix(stripComment(text), `\`) + " " + strings.TrimSpace(lines[i+1])
			i++
		}
		for _, words := range commandsOf(Split(stripComment(text))) {
			for len(words) > 0 && isAssignment(words[0]) {
				words = words[1:]
			}
			if len(words) == 0 || !want[words[0]] {
				continue
			}
			out = append(out, Command{File: file, Line: start + 1, Text: text, Words: words})
		}
	}
	return out, nil
}

// commandsOf splits a line's words at the shell's list and pipe
// operators, written apart from their neighbours as the docs do.
func commandsOf(words []string) [][]string {
	var out [][]string
	start := 0
	for i, w := range words {
		switch w {
		case "&&", "||", ";", "|", "&":
			out = append(out, words[start:i])
			start = i + 1
		}
	}
	return append(out, words[start:])
}

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

func isAssignment(w string) bool { return assignment.MatchString(w) }

// stripComment drops a shell comment: a # outside quotes at the start of a
// word.
func stripComment(s string) string {
	var quote rune
	prev := ' '
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && unicode.IsSpace(prev):
			return strings.TrimRightFunc(s[:i], unicode.IsSpace)
		}
		prev = r
	}
	return strings.TrimRightFunc(s, unicode.IsSpace)
}

// Split splits a command line into words as the shell does for quoting
// (single and double quotes, backslash escapes outside single quotes),
// expanding nothing: "$VAR" stays $VAR.
func Split(s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	runes := []rune(s)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		switch {
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch {
			case r == '"':
				quote = 0
			case r == '\\' && i+1 < len(runes) && strings.ContainsRune(`"\$`+"`", runes[i+1]):
				i++
				cur.WriteRune(runes[i])
			default:
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '\\' && i+1 < len(runes):
			i++
			cur.WriteRune(runes[i])
			inWord = true
		case unicode.IsSpace(r):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// Link is one relative link of a markdown file.
type Link struct {
	File   string
	Line   int
	Target string // as written: path, path#anchor or #anchor
}

func (l Link) String() string { return fmt.Sprintf("%s:%d: (%s)", l.File, l.Line, l.Target) }

// linkPattern finds [text](target) and ![alt](target); a title after the
// target is not used in these pages.
var linkPattern = regexp.MustCompile(`\]\(([^()\s]+)\)`)

// Links returns the relative links of file: not in fenced blocks or inline
// code, and not to another scheme (http:, https:, mailto:).
func Links(file string) ([]Link, error) {
	lines, err := readLines(file)
	if err != nil {
		return nil, err
	}
	var out []Link
	inBlock := false
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock {
			continue
		}
		for _, m := range linkPattern.FindAllStringSubmatchIndex(line, -1) {
			if insideCode(line, m[0]) {
				continue
			}
			target := line[m[2]:m[3]]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			out = append(out, Link{File: file, Line: i + 1, Target: target})
		}
	}
	return out, nil
}

// insideCode reports whether byte offset at of line is inside an inline
// code span.
func insideCode(line string, at int) bool {
	return strings.Count(line[:at], "`")%2 == 1
}

// CheckLink returns why l does not resolve, or "" when it does: the file
// must exist (relative to the linking file) and the anchor, when given,
// must be a heading of the target markdown file.
func CheckLink(l Link) string {
	path, anchor, _ := strings.Cut(l.Target, "#")
	target := l.File
	if path != "" {
		target = filepath.Join(filepath.Dir(l.File), filepath.FromSlash(path))
		if _, err := os.Stat(target); err != nil {
			return fmt.Sprintf("%s does not exist", path)
		}
	}
	if anchor == "" {
		return ""
	}
	if !strings.HasSuffix(target, ".md") {
		return fmt.Sprintf("#%s: anchors are checked only in markdown files", anchor)
	}
	anchors, err := Anchors(target)
	if err != nil {
		return err.Error()
	}
	if !anchors[anchor] {
		return fmt.Sprintf("%s has no heading #%s", filepath.Base(target), anchor)
	}
	return ""
}

// Anchors returns the anchors GitHub makes for the headings of file:
// lower case, punctuation other than - and _ removed, spaces as -, and
// -1, -2, … after repeats.
func Anchors(file string) (map[string]bool, error) {
	lines, err := readLines(file)
	if err != nil {
		return nil, err
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	inBlock := false
	for _, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock || !strings.HasPrefix(line, "#") {
			continue
		}
		level := len(line) - len(strings.TrimLeft(line, "#"))
		text := strings.TrimSpace(line[level:])
		if level > 6 || line[level] != ' ' || text == "" {
			continue
		}
		slug := Slug(text)
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors, nil
}

// Slug is GitHub's anchor for a heading's text.
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func readLines(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}

// Block is the text of one fenced block.
type Block struct {
	File string
	Line int // of the block's first line of text
	Text string
	// Tags are the words of the info string after the language: a block
	// opened with ```sql postgres-read has the tag postgres-read. GitHub
	// highlights by the first word and shows none of the others, so a
	// test can find a block by its tag without the reader seeing one.
	Tags []string
}

// Blocks returns the fenced blocks of file whose info string's first word
// is lang ("yaml", "json", "sql", …).
func Blocks(file, lang string) ([]Block, error) {
	lines, err := readLines(file)
	if err != nil {
		return nil, err
	}
	var out []Block
	var cur *Block
	inBlock := false
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if inBlock {
				if cur != nil {
					out = append(out, *cur)
					cur = nil
				}
				inBlock = false
				continue
			}
			inBlock = true
			if info := strings.Fields(strings.TrimPrefix(trimmed, "```")); len(info) > 0 && info[0] == lang {
				cur = &Block{File: file, Line: i + 2}
				if len(info) > 1 {
					cur.Tags = info[1:]
				}
			}
			continue
		}
		if cur != nil {
			cur.Text += line + "\n"
		}
	}
	return out, nil
}

// Tagged returns the one fenced block of file in language lang that has
// tag, and an error naming the file when there is none or more than one.
func Tagged(file, lang, tag string) (Block, error) {
	blocks, err := Blocks(file, lang)
	if err != nil {
		return Block{}, err
	}
	var found []Block
	for _, b := range blocks {
		for _, t := range b.Tags {
			if t == tag {
				found = append(found, b)
			}
		}
	}
	if len(found) != 1 {
		return Block{}, fmt.Errorf("%s: %d blocks tagged ```%s %s, want 1", file, len(found), lang, tag)
	}
	return found[0], nil
}
