package readme

import (
	"slices"
	"strings"
	"testing"
)

func TestMatches(t *testing.T) {
	for _, c := range []struct {
		want, got string
		ok        bool
	}{
		{"1", "1", true},
		{"1", "2", false},
		{"1", "1\n2", false},
		{`{"status":"ok",...}`, `{"status":"ok","runtime":"engine"}` + "\n", true},
		{`{"status":"ok",...}`, `{"status":"draining"}`, false},
		{"ID ... NAME ... STATE ...\n... counter ... active ...",
			"ID    NAME     STATE   FREE\nabc   counter  active  1/2", true},
		{"ID ... NAME ... STATE ...\n... counter ... active ...",
			"ID    NAME     STATE   FREE\nabc   counter  stopped  1/2", false},
		{"a b", "a   \tb", true},
		{"a b", "ab", false},
		{"berth ...", "berth dev (commit x)", true},
	} {
		if got := Matches(c.want, c.got); got != c.ok {
			t.Errorf("Matches(%q, %q) = %v, want %v", c.want, c.got, got, c.ok)
		}
	}
}

func TestParse(t *testing.T) {
	fence := "```"
	readme := strings.Join([]string{
		"# Title",
		"## Run",
		"<!-- readme-test: engine -->",
		fence + "sh", "make run", fence,
		"text",
		fence + "sh", "# a comment", "", "./bin/berth actors list \\", "  --json", "x=1   # set x", fence,
		"",
		fence + "text", "[]", fence,
		"## Other",
		"<!-- readme-test: skip too long -->",
		fence + "bash", "make bench", fence,
		fence + "go", "package main", fence,
	}, "\n")
	blocks, err := Parse(readme)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 3 {
		t.Fatalf("%d blocks: %+v", len(blocks), blocks)
	}
	if b := blocks[0]; b.Kind != "engine" || b.Section != "Run" || !slices.Equal(b.Cmds, []string{"make run"}) || b.HasOut || b.Line != 4 {
		t.Errorf("engine block: %+v", b)
	}
	if b := blocks[1]; b.Kind != "" || !slices.Equal(b.Cmds, []string{"./bin/berth actors list --json", "x=1   # set x"}) || !b.HasOut || b.Output != "[]" {
		t.Errorf("shell block: %+v", b)
	}
	if b := blocks[2]; b.Kind != "skip" || b.Reason != "too long" || b.Section != "Other" {
		t.Errorf("skipped block: %+v", b)
	}

	for name, bad := range map[string]string{
		"marker without block": "<!-- readme-test: skip x -->\n\ntext",
		"skip without reason":  "<!-- readme-test: skip -->\n" + fence + "sh\nls\n" + fence,
		"unknown marker":       "<!-- readme-test: later -->\n" + fence + "sh\nls\n" + fence,
		"marker on go block":   "<!-- readme-test: skip x -->\n" + fence + "go\nx\n" + fence,
		"text without shell":   "words\n" + fence + "text\n1\n" + fence,
		"output of engine":     "<!-- readme-test: engine -->\n" + fence + "sh\nmake run\n" + fence + "\n" + fence + "text\n1\n" + fence,
		"unclosed":             fence + "sh\nls\n",
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
