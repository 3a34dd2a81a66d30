package blocks

import (
	"slices"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
)

// TestMarkdownToMrkdwn is the formatting contract: Markdown as agents write
// it in, the mrkdwn Slack shows out.
func TestMarkdownToMrkdwn(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"plain", "Which environment?", "Which environment?"},
		{"bold stars", "deploy **now**", "deploy *now*"},
		{"bold underscores", "deploy __now__", "deploy *now*"},
		{"italic star", "deploy *now*", "deploy _now_"},
		{"italic underscore", "deploy _now_", "deploy _now_"},
		{"bold italic", "***both***", "_*both*_"},
		{"strikethrough", "~~old~~ new", "~old~ new"},
		{"formatting across lines", "**one\ntwo _three\nfour_**", "*one*\n*two _three_*\n*_four_*"},
		{"inline code", "run `make test` first", "run `make test` first"},
		{"inline code keeps markers", "`**not bold**`", "`**not bold**`"},
		{"inline code escapes", "`a<b && c>d`", "`a&lt;b &amp;&amp; c&gt;d`"},
		{"inline code backtick", "`` a`b ``", "`aˋb`"},
		{"fenced code", "```go\nx := <-ch\n*p = 1\n```", "```\nx := &lt;-ch\n*p = 1\n```"},
		{"indented code", "see:\n\n    go test ./...", "see:\n\n```\ngo test ./...\n```"},
		{"link", "see [the docs](https://example.com/a?b=1&c=2)", "see <https://example.com/a?b=1&amp;c=2|the docs>"},
		{"link with formatted label", "[**docs**](https://example.com)", "<https://example.com|docs>"},
		{"link with pipe", "[a](https://example.com/x|y)", "<https://example.com/x%7Cy|a>"},
		{"autolink", "<https://example.com>", "<https://example.com>"},
		{"email autolink", "<ops@example.com>", "<mailto:ops@example.com>"},
		{"unsafe link shows its text", "[click](javascript:alert(1))", "click"},
		{"relative link shows its text", "[file](./x.md)", "file"},
		{"image", "![chart](https://example.com/c.png)", "<https://example.com/c.png|chart>"},
		{"bullet list", "- one\n- two\n* three", "• one\n• two\n• three"},
		{"ordered list", "1. one\n2. two", "1. one\n2. two"},
		{"ordered list start", "3. three\n4. four", "3. three\n4. four"},
		{"nested list", "- a\n  - b\n    1. c\n- d", "• a\n    • b\n        1. c\n• d"},
		{"list after paragraph", "Options:\n- a\n- b\n\nThen go.", "Options:\n• a\n• b\n\nThen go."},
		{"list item with formatting", "- **a** `b`", "• *a* `b`"},
		{"paragraphs", "one\n\ntwo", "one\n\ntwo"},
		{"soft line break kept", "one\ntwo", "one\ntwo"},
		{"hard line break", "one  \ntwo", "one\ntwo"},
		{"block quote", "> quoted\n> on two lines\n\nafter", "> quoted\n> on two lines\n\nafter"},
		{"quote in quote", "> a\n>> b", "> a\n> \n> b"},
		{"quote in list", "- > a", "• a"},
		{"heading", "# Plan\nsteps", "*Plan*\n\nsteps"},
		{"heading with bold", "## The **real** plan", "*The real plan*"},
		{"setext heading", "Plan\n====", "*Plan*"},
		{"thematic break", "a\n\n---\n\nb", "a\n\n───\n\nb"},
		{"html is text", "<b>hi</b>", "&lt;b&gt;hi&lt;/b&gt;"},
		{"entities", "&amp; &lt; &copy; &#42;", "&amp; &lt; © ∗"},
		{"escaped markers are inert", `\*not bold\* \_not it\_ \~x\~ \` + "`", "∗not bold∗ ˍnot itˍ ∼x∼ ˋ"},
		{"spaced star is inert", "5 * 3", "5 ∗ 3"},
		{"snake_case stays", "set max_open_conns", "set max_open_conns"},
		{"ampersand and angles", "a & b < c > d", "a &amp; b &lt; c &gt; d"},
		{"nothing visible is shown as written", ">", "&gt;"},
		{"empty link is shown as written", "[]()", "[]()"},
		{"too deep is shown as written", strings.Repeat("> ", maxNesting+1) + "*x*", strings.Repeat("&gt; ", maxNesting+1) + "∗x∗"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := joinToks(markdown(c.in)); got != c.want {
				t.Errorf("markdown(%q)\n got %q\nwant %q", c.in, got, c.want)
			}
		})
	}
}

// TestMarkdownDegenerate: text that converts to nothing visible or nests
// absurdly deep still renders to a valid message.
func TestMarkdownDegenerate(t *testing.T) {
	loadSchemas(t)
	for _, d := range []string{">", strings.Repeat(">", interaction.MaxDetailLen), strings.Repeat("- ", interaction.MaxDetailLen/2), "<!-- -->"} {
		r := interaction.Request{Questions: []interaction.Question{{ID: "q", Question: d[:min(len(d), interaction.MaxQuestionLen)], Detail: d,
			Options: []interaction.Option{{Label: "a", Description: d[:min(len(d), interaction.MaxDescriptionLen)]}}}}}
		if err := drawable(r); err != nil {
			t.Fatal(err)
		}
		v := pendingView(r)
		text, bs := Message(v)
		reportProblems(t, checkMessage(t, d[:min(len(d), 10)], v, text, bs))
		reportProblems(t, checkModal(t, d[:min(len(d), 10)]+" details", DetailsModal(v, 0, "")))
	}
}

// TestMarkdownNestingBound: lists nested deeper than maxNesting stop
// indenting there (their items align under the deepest bullet's text) and
// keep their text.
func TestMarkdownNestingBound(t *testing.T) {
	var src strings.Builder
	for i := range maxNesting + 5 {
		src.WriteString(strings.Repeat("  ", i) + "- x\n")
	}
	lines := strings.Split(joinToks(markdown(src.String())), "\n")
	if len(lines) != maxNesting+5 {
		t.Fatalf("%d lines, want %d", len(lines), maxNesting+5)
	}
	for i, l := range lines {
		indent := len(l) - len(strings.TrimLeft(l, " "))
		want := 4 * i
		if i >= maxNesting {
			want = 4 * maxNesting
		}
		if indent != want || !strings.HasSuffix(l, "x") {
			t.Errorf("line %d = %q: indent %d, want %d", i, l, indent, want)
		}
	}
}

// TestMarkdownNoPing: mentions, broadcasts and links an agent writes stay
// literal text, in prose, code and link labels alike.
func TestMarkdownNoPing(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"<!channel> and <!here>", "&lt;!channel&gt; and &lt;!here&gt;"},
		{"<!everyone|all>", "&lt;!everyone|all&gt;"},
		{"ping @here and @channel, @Everyone", "ping @\u200dhere and @\u200dchannel, @\u200dEveryone"},
		{"<@U123> and <!subteam^S1>", "&lt;@U123&gt; and &lt;!subteam^S1&gt;"},
		{"<#C1|general>", "&lt;#C1|general&gt;"},
		{"**<!here>**", "*&lt;!here&gt;*"},
		{"`@here <!channel>`", "`@\u200dhere &lt;!channel&gt;`"},
		{"```\n<!channel> @channel\n```", "```\n&lt;!channel&gt; @\u200dchannel\n```"},
		{"[<!here> @here](https://example.com)", "<https://example.com|&lt;!here&gt; @\u200dhere>"},
		{"<https://evil|click>", "https://evil|click"},
	} {
		got := joinToks(markdown(c.in))
		if got != c.want {
			t.Errorf("markdown(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
		if err := checkEscaped(got); err != nil {
			t.Errorf("markdown(%q) = %q: %v", c.in, got, err)
		}
	}
}

func TestMdPlain(t *testing.T) {
	got := mdPlain("**fast** but _costly_ — see [docs](https://x.y) & `cfg`")
	if want := "fast but costly — see docs & cfg"; got != want {
		t.Errorf("mdPlain = %q, want %q", got, want)
	}
}

// TestPlainTextKeepsBold: a formatting character in a header or an agent
// name cannot end or start formatting around it.
func TestPlainTextKeepsBold(t *testing.T) {
	r := interaction.Request{
		Agent: &interaction.Agent{ID: "bot_1*", Name: "*deploy* _bot_ ~x~ `y`"},
		Questions: []interaction.Question{{
			ID: "q", Header: "Step *2* of_3 @here", Question: "Go?",
			Options: []interaction.Option{{Label: "yes"}},
		}},
	}
	text, _ := questionText(r.Questions[0], maxSection, "")
	head, _, _ := strings.Cut(text, "\n")
	if want := "*Step ∗2∗ of_3 @\u200dhere*"; head != want {
		t.Errorf("header line = %q, want %q", head, want)
	}
	if got, want := agentName(r), "∗deploy∗ ˍbotˍ ∼x∼ ˋyˋ (bot_1∗)"; got != want {
		t.Errorf("agentName = %q, want %q", got, want)
	}
	// Only the renderer's own markers remain in the head line, and
	// markers inside a word, which Slack leaves alone.
	sec := headBlock(pendingView(r)).(*slack.SectionBlock)
	line := sec.Text.Text[strings.LastIndex(sec.Text.Text, "\n")+1:]
	if strings.Count(line, "*") != 2 || strings.ContainsAny(strings.ReplaceAll(line, "bot_1", ""), "_~`") {
		t.Errorf("head line %q has stray markers", line)
	}
}

// TestLabelReturnedAsWritten: a label with Markdown and mentions is shown
// escaped but comes back byte for byte.
func TestLabelReturnedAsWritten(t *testing.T) {
	label := "**Yes** <!channel> @here & go_now"
	r := interaction.Request{Questions: []interaction.Question{{
		ID: "q", Question: "Go?", Options: []interaction.Option{{Label: label}, {Label: "no"}},
	}}}
	v := pendingView(r)
	got, err := LabelsFromAction(v, 0, &slack.BlockAction{
		ActionID: ActionID(Ref{AskID: v.AskID, Rev: v.Rev, Question: 0, Kind: KindSelect}),
		Type:     "static_select", SelectedOption: slack.OptionBlockObject{Value: "0"},
	})
	if err != nil || !slices.Equal(got, []string{label}) {
		t.Fatalf("LabelsFromAction = %q, %v; want %q", got, err, label)
	}
	v.Status = interaction.StatusAnswered
	v.Answer = &interaction.Answer{Answers: []interaction.AnswerItem{{ID: "q", Selected: []string{label}}}}
	shown := answerText(v, 0)
	if want := "*Answer:* ∗∗Yes∗∗ &lt;!channel&gt; @\u200dhere &amp; go_now"; shown != want {
		t.Errorf("answerText = %q, want %q", shown, want)
	}
}

// TestClipToksClosesMarkers: shortening converted text never leaves a
// marker open or cuts a link.
func TestClipToksClosesMarkers(t *testing.T) {
	ts := markdown("**bold words here** and [a link](https://example.com/long/path) and ```x```")
	for max := 1; max <= toksLen(ts); max++ {
		got := clipToks(ts, max)
		if textLen(got) > max {
			t.Fatalf("max %d: %q is %d long", max, got, textLen(got))
		}
		if strings.Count(got, "*")%2 != 0 || strings.Count(got, "`")%2 != 0 {
			t.Fatalf("max %d: %q leaves a marker open", max, got)
		}
		if strings.Count(got, "<") != strings.Count(got, ">") {
			t.Fatalf("max %d: %q cuts a link", max, got)
		}
	}
	if got := clipToks(markdown("```\nline one\nline two\n```"), 17); got != "```\nline one…\n```" {
		t.Errorf("code block cut = %q", got)
	}
}

// TestSplitToksReopens: a section break inside formatting closes it at the
// end of one section and opens it again at the start of the next.
func TestSplitToksReopens(t *testing.T) {
	got := splitToks(markdown("para **bold text goes on and on** more"), 22)
	want := []string{"para *bold text goes*", "*on and on* more"}
	if !slices.Equal(got, want) {
		t.Errorf("splitToks = %q, want %q", got, want)
	}
	got = splitToks(markdown("```\nline one\nline two\nline three\n```"), 22)
	want = []string{"```\nline one\n```", "```\nline two\n```", "```\nline three\n```"}
	if !slices.Equal(got, want) {
		t.Errorf("splitToks code = %q, want %q", got, want)
	}
}

// TestQuestionTextMarkdown: question and detail are converted, option
// descriptions in the menu are plain words.
func TestQuestionTextMarkdown(t *testing.T) {
	q := interaction.Question{
		ID: "q", Question: "Deploy **now**?", Detail: "- runs `migrate`\n- then [checks](https://example.com)",
		Options: []interaction.Option{{Label: "yes", Description: "**fast**, see `log`"}},
	}
	text, cut := questionText(q, maxSection, "")
	if want := "Deploy *now*?\n\n• runs `migrate`\n• then <https://example.com|checks>"; text != want || cut {
		t.Errorf("questionText = %q (cut %v), want %q", text, cut, want)
	}
	opts, _ := menuOptions(q)
	if got := opts[0].Description.Text; got != "fast, see log" {
		t.Errorf("menu description = %q", got)
	}
}

// FuzzMarkdown: whatever the source, the conversion is inert (no ping, no
// link but its own), and shortening and splitting it keep to their limits
// with every marker closed.
func FuzzMarkdown(f *testing.F) {
	for _, s := range []string{"**b** _i_ ~~s~~ `c`", "- a\n  - b\n1. c", "> q\n>> r", "```\n<!here>\n```", "[l](https://x.y) <a@b.c>", injection, ">", "\\*x\\*"} {
		f.Add(s, 40)
	}
	f.Fuzz(func(t *testing.T, src string, max int) {
		if len(src) > 4000 {
			return
		}
		max = 5 + abs(max%3000)
		ts := markdown(src)
		if err := checkEscaped(joinToks(ts)); err != nil {
			t.Fatalf("markdown(%q): %v", src, err)
		}
		if got := clipToks(ts, max); textLen(got) > max {
			t.Fatalf("clipToks(%q, %d) = %q is %d long", src, max, got, textLen(got))
		}
		// A section holds the longest token (a link) with its markers.
		split := maxLink + 100 + max
		for _, c := range splitToks(ts, split) {
			if textLen(c) > split || strings.TrimSpace(c) == "" {
				t.Fatalf("splitToks(%q, %d): chunk %q", src, split, c)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
