package devui

import (
	"html/template"
	"strings"
	"testing"
	"time"
)

var testNames = Names{
	Users:    map[string]string{"U1": "alice", "U2": "<b>bob</b>"},
	Groups:   map[string]string{"S1": "ops"},
	Channels: map[string]string{"C1": "general"},
	Now:      func() time.Time { return time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC) },
	Location: time.UTC,
}

func TestMrkdwn(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "hello", "hello"},
		{"bold", "*bold* text", "<b>bold</b> text"},
		{"italic", "an _italic_ word", "an <i>italic</i> word"},
		{"strike", "~gone~", "<s>gone</s>"},
		{"nested", "*bold _and italic_*", "<b>bold <i>and italic</i></b>"},
		{"not inside words", "2*3*4 and snake_case_name", "2*3*4 and snake_case_name"},
		{"no space after opener", "* not bold*", "* not bold*"},
		{"formatting stays on its line", "*one\ntwo*", "*one<br>two*"},
		{"code", "run `go test` now", "run <code>go test</code> now"},
		{"no formatting in code", "`*x*`", "<code>*x*</code>"},
		{"pre", "before\n```\nline 1\n*line* 2\n```\nafter", "before<br><pre class=\"pre\">line 1\n*line* 2</pre>after"},
		{"quote", "> quoted\n> more\nnot", "<blockquote>quoted<br>more</blockquote>not"},
		{"escaped gt is text", "&gt; not a quote", "&gt; not a quote"},
		{"entities", "a &amp; b &lt;c&gt;", "a &amp; b &lt;c&gt;"},
		{"other entities stay", "&quot;x&quot;", "&amp;quot;x&amp;quot;"},
		{"link", "<https://example.com/a?b=1&amp;c=2|the docs>", `<a href="https://example.com/a?b=1&amp;c=2" target="_blank" rel="noopener noreferrer">the docs</a>`},
		{"bare link", "<https://example.com>", `<a href="https://example.com" target="_blank" rel="noopener noreferrer">https://example.com</a>`},
		{"mailto", "<mailto:a@b.c|mail>", `<a href="mailto:a@b.c" target="_blank" rel="noopener noreferrer">mail</a>`},
		{"javascript link is text", "<javascript:alert(1)|click>", "&lt;javascript:alert(1)|click&gt;"},
		{"user", "hi <@U1>", `hi <span class="mention mention-user" title="U1">@alice</span>`},
		{"unknown user uses label", "<@U9|carol>", `<span class="mention mention-user" title="U9">@carol</span>`},
		{"unknown user id", "<@U9>", `<span class="mention mention-user" title="U9">@U9</span>`},
		{"user name escaped", "<@U2>", `<span class="mention mention-user" title="U2">@&lt;b&gt;bob&lt;/b&gt;</span>`},
		{"group", "<!subteam^S1>", `<span class="mention mention-group" title="S1">@ops</span>`},
		{"group label", "<!subteam^S9|@devs>", `<span class="mention mention-group" title="S9">@devs</span>`},
		{"channel ref", "<#C1>", `<span class="mention mention-channel" title="C1">#general</span>`},
		{"special", "<!here> and <!channel>", `<span class="mention mention-special">@here</span> and <span class="mention mention-special">@channel</span>`},
		{"date", "by <!date^1773502766^{date_short_pretty} {time}|2026-03-14 15:39 UTC>", `by <time datetime="2026-03-14T15:39:26Z" title="2026-03-14 15:39 UTC">today 15:39</time>`},
		{"date long", "<!date^1773502766^{date_long} at {time_secs}|x>", `<time datetime="2026-03-14T15:39:26Z" title="x">Saturday, March 14th, 2026 at 15:39:26</time>`},
		{"bad date uses fallback", "<!date^soon^{date}|some day>", "some day"},
		{"emoji", "done :white_check_mark:", "done ✅"},
		{"unknown emoji", ":not_an_emoji: 10:30", ":not_an_emoji: 10:30"},
		{"lone brackets", "a < b > c", "a &lt; b &gt; c"},
		{"newlines", "a\nb", "a<br>b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(testNames.Mrkdwn(tc.in)); got != tc.want {
				t.Errorf("Mrkdwn(%q)\n got %s\nwant %s", tc.in, got, tc.want)
			}
		})
	}
}

// TestMrkdwnOfMarkdown: the page draws what package blocks makes of an
// agent's Markdown (see blocks.TestMarkdownToMrkdwn) as Slack would.
func TestMrkdwnOfMarkdown(t *testing.T) {
	link := func(href, text string) string {
		return `<a href="` + href + `" target="_blank" rel="noopener noreferrer">` + text + `</a>`
	}
	for _, tc := range []struct{ name, in, want string }{
		{"bold from **", "deploy *now*", "deploy <b>now</b>"},
		{"bold italic", "_*both*_", "<i><b>both</b></i>"},
		{"heading then paragraph", "*Plan*\n\nsteps", "<b>Plan</b><br><br>steps"},
		{"bullets", "Options:\n• a\n• b", "Options:<br>• a<br>• b"},
		{"nested bullets keep their indent", "• a\n    • b\n        1. c", "• a<br>    • b<br>        1. c"},
		{"code block", "see:\n\n```\ngo test ./...\n```", `see:<br><br><pre class="pre">go test ./...</pre>`},
		{"quote", "> quoted\n> on two lines\n\nafter", "<blockquote>quoted<br>on two lines</blockquote><br>after"},
		{"link", "see <https://example.com/a?b=1&amp;c=2|the docs>", "see " + link("https://example.com/a?b=1&amp;c=2", "the docs")},
		{"link label stays text", "<https://example.com|&lt;!here&gt; @\u200dhere>", link("https://example.com", "&lt;!here&gt; @\u200dhere")},
		{"defused broadcast is text", "ping @\u200dhere and @\u200dchannel", "ping @\u200dhere and @\u200dchannel"},
		{"header look-alikes keep the bold", "*Step ∗2∗ ofˍ3*", "<b>Step ∗2∗ ofˍ3</b>"},
		{"strike", "~old~ new", "<s>old</s> new"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(testNames.Mrkdwn(tc.in)); got != tc.want {
				t.Errorf("Mrkdwn(%q)\n got %s\nwant %s", tc.in, got, tc.want)
			}
		})
	}
}

// TestMrkdwnInjection: whatever the text, no markup but the converter's own.
func TestMrkdwnInjection(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"},
		{"&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;script&gt;alert(1)&lt;/script&gt;"},
		{"&lt;img src=x onerror=alert(1)&gt;", "&lt;img src=x onerror=alert(1)&gt;"},
		{"<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;"},
		{"<!channel>", `<span class="mention mention-special">@channel</span>`},
		{`<https://x.test/"onmouseover="alert(1)|x>`, `<a href="https://x.test/&#34;onmouseover=&#34;alert(1)" target="_blank" rel="noopener noreferrer">x</a>`},
		{"<https://x.test|<b>hi</b>>", "&lt;https://x.test|&lt;b&gt;hi&lt;/b&gt;&gt;"},
		{"<data:text/html,<script>alert(1)</script>|x>", "&lt;data:text/html,&lt;script&gt;alert(1)&lt;/script&gt;|x&gt;"},
		{"`<script>`", "<code>&lt;script&gt;</code>"},
		{"```<iframe src=x>```", `<pre class="pre">&lt;iframe src=x&gt;</pre>`},
		{"<@U1|<script>>", "&lt;@U1|&lt;script&gt;&gt;"},
		{"<!date^1^{date}|<script>>", "&lt;!date^1^{date}|&lt;script&gt;&gt;"},
		{"*<script>*", "<b>&lt;script&gt;</b>"},
		{"'\"", "&#39;&#34;"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
	} {
		got := string(testNames.Mrkdwn(tc.in))
		if got != tc.want {
			t.Errorf("Mrkdwn(%q)\n got %s\nwant %s", tc.in, got, tc.want)
		}
		assertOnlyOurTags(t, tc.in, got)
	}
}

var allowedTags = []string{"b", "i", "s", "code", "pre", "blockquote", "br", "a", "span", "time"}

// assertOnlyOurTags checks that every tag in h is one the converter writes
// and that no attribute outside its fixed set appears.
func assertOnlyOurTags(t *testing.T, in, h string) {
	t.Helper()
	for i := 0; i < len(h); i++ {
		if h[i] != '<' {
			continue
		}
		end := strings.IndexByte(h[i:], '>')
		if end < 0 {
			t.Errorf("Mrkdwn(%q): unclosed tag in %s", in, h)
			return
		}
		tag := strings.TrimPrefix(h[i+1:i+end], "/")
		name, attrs, _ := strings.Cut(tag, " ")
		ok := false
		for _, a := range allowedTags {
			ok = ok || name == a
		}
		if !ok {
			t.Errorf("Mrkdwn(%q): tag <%s> in %s", in, name, h)
		}
		for _, bad := range []string{"on", "style", "src"} {
			for _, f := range strings.Fields(attrs) {
				if strings.HasPrefix(f, bad) {
					t.Errorf("Mrkdwn(%q): attribute %s in %s", in, f, h)
				}
			}
		}
		i += end
	}
}

func FuzzMrkdwn(f *testing.F) {
	for _, s := range []string{"*a* _b_ ~c~ `d`", "<https://x|y> <@U1> <!subteam^S1>", "```x```", "> q", "<script>", "&lt;&gt;&amp;", "<!date^1^{date}|x>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h := string(testNames.Mrkdwn(s))
		assertOnlyOurTags(t, s, h)
		if strings.Contains(strings.ToLower(h), "javascript:") && strings.Contains(h, `href="javascript`) {
			t.Errorf("javascript link from %q: %s", s, h)
		}
	})
}

func TestPlain(t *testing.T) {
	if got := Plain("<b>&amp; :tada:\nx", true); got != template.HTML("&lt;b&gt;&amp;amp; 🎉<br>x") {
		t.Errorf("Plain: %s", got)
	}
	if got := Plain(":tada:", false); got != ":tada:" {
		t.Errorf("Plain without emoji: %s", got)
	}
}

func TestFormatDate(t *testing.T) {
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		t      time.Time
		format string
		want   string
	}{
		{now.Add(-24 * time.Hour), "{date_pretty}", "yesterday"},
		{now.Add(24 * time.Hour), "{date_long_pretty}", "tomorrow"},
		{now.Add(72 * time.Hour), "{date_pretty}", "March 17th, 2026"},
		{now, "{date_num} {date_slash}", "2026-03-14 03/14/2026"},
		{now.Add(-3 * time.Minute), "{ago}", "3 minutes ago"},
		{now.Add(2 * time.Hour), "{ago}", "in 2 hours"},
		{time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), "{date}", "March 1st, 2026"},
		{time.Date(2026, 3, 22, 0, 0, 0, 0, time.UTC), "{date}", "March 22nd, 2026"},
		{time.Date(2026, 3, 13, 0, 0, 0, 0, time.UTC), "{date_short}", "Mar 13, 2026"},
		{time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC), "{date}", "March 11th, 2026"},
	} {
		if got := formatDate(tc.format, tc.t, now); got != tc.want {
			t.Errorf("formatDate(%q, %v) = %q, want %q", tc.format, tc.t, got, tc.want)
		}
	}
}
