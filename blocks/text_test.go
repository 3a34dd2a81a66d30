package blocks

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slackask/slackask/interaction"
)

func TestEscape(t *testing.T) {
	got := escape(injection)
	want := "&lt;!channel&gt; &lt;@U123&gt; &lt;#C1|x&gt; &lt;https://evil|click&gt; &amp; &lt;!here&gt;"
	if got != want {
		t.Errorf("escape = %q, want %q", got, want)
	}
	if got := escape("a\xffb"); got != "a\uFFFDb" {
		t.Errorf("invalid UTF-8: %q", got)
	}
}

func TestClip(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 75, "short"},
		{"abcdef", 5, "abcd…"},
		{"ab   cdef", 5, "ab…"},
		{"日本語テキスト", 4, "日本語…"},
		{"🙂🙂🙂🙂", 5, "🙂🙂…"}, // astral runes count 2
		{"a\u200d🙂", 3, "a…"},
		{"a\xff", 5, "a\uFFFD"},
	} {
		if got := clip(c.in, c.max); got != c.want {
			t.Errorf("clip(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}

func TestClipEscapedNeverSplitsEntities(t *testing.T) {
	s := strings.Repeat("<&>", 50)
	for max := 1; max < 80; max++ {
		got := clipEscaped(s, max)
		if textLen(got) > max {
			t.Fatalf("max %d: %q is %d long", max, got, textLen(got))
		}
		if err := checkEscaped(strings.TrimSuffix(got, ellipsis)); err != nil {
			t.Fatalf("max %d: %q: %v", max, got, err)
		}
	}
}

func TestSplitToks(t *testing.T) {
	text := longString("word", 9000) + "\n" + strings.Repeat("&<>🙂", 3000) + "\n\n\n   \n" + strings.Repeat("x", 7000)
	chunks := splitToks(literal(text, true), 3000)
	var joined strings.Builder
	for i, c := range chunks {
		if textLen(c) > 3000 || strings.TrimSpace(c) == "" || !utf8.ValidString(c) {
			t.Errorf("chunk %d: %d units, blank %v", i, textLen(c), strings.TrimSpace(c) == "")
		}
		if err := checkEscaped(c); err != nil {
			t.Errorf("chunk %d: %v", i, err)
		}
		joined.WriteString(c)
	}
	strip := func(s string) string { return strings.Join(strings.Fields(s), "") }
	if strip(joined.String()) != strip(escape(text)) {
		t.Error("chunks lose text")
	}
	if got := splitToks(markdown(" \n\t"), 10); len(got) != 0 {
		t.Errorf("blank text: %q", got)
	}
}

func TestJoinCapped(t *testing.T) {
	items := make([]string, 300)
	for i := range items {
		items[i] = "<@U12345678>"
	}
	got := joinCapped(items, ", ", 200)
	if textLen(got) > 200 || !strings.HasSuffix(got, "more") {
		t.Errorf("joinCapped = %q (%d)", got, textLen(got))
	}
	if got := joinCapped(items[:2], ", ", 200); got != "<@U12345678>, <@U12345678>" {
		t.Errorf("joinCapped = %q", got)
	}
}

// TestInjectionInert checks that no caller text turns into a mention, a
// link or a command anywhere in mrkdwn or fallback text: the checker
// accepts only the renderer's own <@U…>, <!subteam^S…> and <!date…>.
func TestInjectionInert(t *testing.T) {
	views := map[string]View{"pending": injectionView()}
	for k, v := range endedViews() {
		views[k] = v
	}
	for name, v := range views {
		text, bs := Message(v)
		reportProblems(t, checkMessage(t, name, v, text, bs))
		raw := string(toJSON(t, bs)) + text
		for _, bad := range []string{"<!channel>", "<!here>", "<!everyone>", "<@U123>", "<#C1", "<https://evil", "<@U999>", "\\u003c!channel", "\\u003c@U123"} {
			for _, mk := range mrkdwnTexts(decode(t, toJSON(t, bs))) {
				if strings.Contains(mk, bad) {
					t.Errorf("%s: %q in mrkdwn %.80q", name, bad, mk)
				}
			}
			if strings.Contains(text, bad) {
				t.Errorf("%s: %q in the fallback text", name, bad)
			}
		}
		if v.Status == interaction.StatusPending && !strings.Contains(raw, "&lt;!channel&gt;") {
			t.Errorf("%s: the injection is not shown escaped", name)
		}
		for q := range v.Request.Questions {
			reportProblems(t, checkModal(t, name+" other", OtherModal(v, q, injection)))
			reportProblems(t, checkModal(t, name+" details", DetailsModal(v, q, injection)))
		}
	}
}

// mrkdwnTexts collects the text of every mrkdwn object in decoded JSON.
func mrkdwnTexts(v any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		if x["type"] == "mrkdwn" {
			s, _ := x["text"].(string)
			out = append(out, s)
		}
		for _, e := range x {
			out = append(out, mrkdwnTexts(e)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, mrkdwnTexts(e)...)
		}
	}
	return out
}
