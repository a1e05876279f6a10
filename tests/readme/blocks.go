// Package readme runs the shell commands of the repository's README.md against a real engine,
// so that the README cannot drift from what berth does. The conventions a README block
// follows for it are in CONTRIBUTING.md ("The README is a test").
package readme

import (
	"fmt"
	"regexp"
	"strings"
)

// Block is one shell code block of the README.
type Block struct {
	Line    int      // line of its opening fence, from 1
	Section string   // the heading of the README section it is in
	Kind    string   // "" (run in the shell), "engine", "runner" or "skip"
	Reason  string   // why a skipped block is skipped
	Cmds    []string // its commands: lines joined at a trailing backslash, comments and blank lines left out
	Output  string   // the output its last command prints, from a ```text block right after it; "" when none is shown
	HasOut  bool     // Output was given
}

// markerRe is the comment before a block that tells the test how to treat it.
var markerRe = regexp.MustCompile(`^<!--\s*readme-test:\s*(\S+)\s*(.*?)\s*-->$`)

// shellLangs are the info strings of the blocks that are run.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true}

// Parse returns the shell blocks of a README in order. A marker must stand on the line right
// before a fence, and a ```text block must follow a shell block (blank lines between are
// fine); anything else is an error naming the line.
func Parse(readme string) ([]Block, error) {
	lines := strings.Split(readme, "\n")
	var blocks []Block
	section := ""
	lastShell := -1 // index in blocks of the shell block a ```text block may follow
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], " \t\r")
		switch {
		case strings.HasPrefix(l, "#"):
			section = strings.TrimSpace(strings.TrimLeft(l, "#"))
			lastShell = -1
			continue
		case l == "":
			continue
		case markerRe.MatchString(l):
			if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
				return nil, fmt.Errorf("README.md:%d: a readme-test marker must stand right before a code block", i+1)
			}
			continue
		case !strings.HasPrefix(l, "```"):
			lastShell = -1
			continue
		}
		lang := strings.TrimSpace(strings.TrimPrefix(l, "```"))
		start := i
		var body []string
		for i++; i < len(lines) && strings.TrimRight(lines[i], " \t\r") != "```"; i++ {
			body = append(body, lines[i])
		}
		if i == len(lines) {
			return nil, fmt.Errorf("README.md:%d: code block not closed", start+1)
		}
		kind, reason := "", ""
		if start > 0 {
			if m := markerRe.FindStringSubmatch(strings.TrimSpace(lines[start-1])); m != nil {
				kind, reason = m[1], m[2]
			}
		}
		switch {
		case lang == "text":
			if lastShell < 0 {
				return nil, fmt.Errorf("README.md:%d: a text block shows the output of the shell block right before it, and there is none", start+1)
			}
			if blocks[lastShell].Kind != "" {
				return nil, fmt.Errorf("README.md:%d: output shown for a %s block, which the test does not run in the shell", start+1, blocks[lastShell].Kind)
			}
			blocks[lastShell].Output, blocks[lastShell].HasOut = strings.Join(body, "\n"), true
			lastShell = -1
		case shellLangs[lang]:
			switch kind {
			case "", "engine", "runner":
			case "skip":
				if reason == "" {
					return nil, fmt.Errorf("README.md:%d: a skipped block says why (<!-- readme-test: skip REASON -->)", start)
				}
			default:
				return nil, fmt.Errorf("README.md:%d: unknown readme-test marker %q (skip, engine or runner)", start, kind)
			}
			blocks = append(blocks, Block{Line: start + 1, Section: section, Kind: kind, Reason: reason, Cmds: commands(body)})
			lastShell = len(blocks) - 1
		default:
			if kind != "" {
				return nil, fmt.Errorf("README.md:%d: readme-test marker before a %q block, which is not run", start, lang)
			}
			lastShell = -1
		}
	}
	return blocks, nil
}

// commands joins continued lines (a trailing backslash) and drops blank and comment lines.
func commands(body []string) []string {
	var out []string
	cur := ""
	for _, l := range body {
		l = strings.TrimSpace(l)
		if cont, ok := strings.CutSuffix(l, `\`); ok {
			cur += cont
			continue
		}
		cmd := strings.TrimSpace(cur + l)
		cur = ""
		if cmd == "" || strings.HasPrefix(cmd, "#") {
			continue
		}
		out = append(out, cmd)
	}
	if c := strings.TrimSpace(cur); c != "" {
		out = append(out, c)
	}
	return out
}

// Matches says whether got has the shape of want: as many lines, each matching its line of
// want, where "..." stands for any text (the spaces around it included) and a run of spaces
// for any run of whitespace.
func Matches(want, got string) bool {
	wl := strings.Split(strings.TrimRight(want, "\n"), "\n")
	gl := strings.Split(strings.TrimRight(got, "\n"), "\n")
	if len(wl) != len(gl) {
		return false
	}
	for i, w := range wl {
		if !lineRe(w).MatchString(strings.TrimSpace(gl[i])) {
			return false
		}
	}
	return true
}

// lineRe is the pattern of one line of shown output.
func lineRe(line string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`^`)
	for i, part := range strings.Split(strings.TrimSpace(line), "...") {
		if i > 0 {
			b.WriteString(`.*`)
		}
		for j, word := range strings.Fields(part) {
			if j > 0 {
				b.WriteString(`\s+`)
			}
			b.WriteString(regexp.QuoteMeta(word))
		}
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String())
}
