package devui

import (
	"fmt"
	"html"
	"html/template"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/slackask/slackask/interaction"
)

// Names resolves the ids that mrkdwn mentions to what a Slack client shows,
// and holds the clock and time zone for <!date^…> sequences. Missing entries
// fall back to the sequence's own label, then to the id.
type Names struct {
	Users    map[string]string // U…/W… → name
	Groups   map[string]string // S… → handle (without "@")
	Channels map[string]string // C… → name (without "#")
	Now      func() time.Time  // default time.Now
	Location *time.Location    // default time.Local
}

func (n Names) now() time.Time {
	if n.Now != nil {
		return n.Now()
	}
	return time.Now()
}

func (n Names) loc() *time.Location {
	if n.Location != nil {
		return n.Location
	}
	return time.Local
}

// Mrkdwn converts Slack mrkdwn to HTML the way a Slack client displays it:
// *bold*, _italic_, ~strike~, `code`, ```pre```, "> " quotes, <url|text>
// links (http, https and mailto only), <@U…> and <!subteam^S…> mentions as
// @name, <#C…> as #name, <!here>/<!channel>/<!everyone>, <!date^…|fallback>,
// line breaks, and the entities &amp; &lt; &gt; shown as characters.
//
// Every piece of text is HTML-escaped and the only markup in the result is
// the fixed set of tags this function writes, so the result is safe to put
// in a page whatever the input.
func (n Names) Mrkdwn(s string) template.HTML {
	var b strings.Builder
	n.blocks(&b, s)
	return template.HTML(b.String()) //nolint:gosec // built from escaped pieces only
}

// Plain converts a plain_text object to HTML: escaped, line breaks kept,
// and with emoji on, :shortcodes: replaced by the emoji they name.
func Plain(s string, emoji bool) template.HTML {
	if emoji {
		s = replaceEmoji(s)
	}
	return template.HTML(escapeText(s)) //nolint:gosec // escaped
}

// escapeText HTML-escapes s and turns newlines into <br>.
func escapeText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(html.EscapeString(s), "\n", "<br>")
}

// decodeEntities turns the three entities Slack uses back into characters.
// Nothing else is decoded: "&quot;" stays as typed.
func decodeEntities(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(s)
}

// blocks splits s into ``` preformatted blocks, quotes and ordinary lines.
func (n Names) blocks(b *strings.Builder, s string) {
	for s != "" {
		i := strings.Index(s, "```")
		if i < 0 {
			n.lines(b, s)
			return
		}
		j := strings.Index(s[i+3:], "```")
		if j < 0 {
			n.lines(b, s)
			return
		}
		n.lines(b, s[:i])
		body := strings.TrimPrefix(strings.TrimSuffix(s[i+3:i+3+j], "\n"), "\n")
		b.WriteString(`<pre class="pre">`)
		b.WriteString(html.EscapeString(strings.ToValidUTF8(decodeEntities(body), "\uFFFD")))
		b.WriteString(`</pre>`)
		s = strings.TrimPrefix(s[i+3+j+3:], "\n")
	}
}

// lines renders lines, grouping runs of "> " lines into one quote (a
// block of its own, so no line break is needed around it).
func (n Names) lines(b *strings.Builder, s string) {
	if s == "" {
		return
	}
	ls := strings.Split(s, "\n")
	for i := 0; i < len(ls); {
		j := i
		quote := isQuote(ls[i])
		for j < len(ls) && isQuote(ls[j]) == quote {
			j++
		}
		if quote {
			q := make([]string, 0, j-i)
			for _, l := range ls[i:j] {
				q = append(q, strings.TrimPrefix(strings.TrimPrefix(l, ">"), " "))
			}
			b.WriteString(`<blockquote>`)
			n.inline(b, strings.Join(q, "\n"))
			b.WriteString(`</blockquote>`)
		} else {
			n.inline(b, strings.Join(ls[i:j], "\n"))
		}
		i = j
	}
}

// isQuote reports whether a line is a quote: a literal ">" at its start
// (an escaped "&gt;" is text).
func isQuote(line string) bool { return strings.HasPrefix(line, ">") }

// inline renders formatting, code spans and <…> sequences of one run of
// text (which may span lines; formatting never does).
func (n Names) inline(b *strings.Builder, s string) {
	text := func(t string) { b.WriteString(escapeText(replaceEmoji(decodeEntities(t)))) }
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch c {
		case '<':
			if end := atomEnd(s, i); end > i+1 {
				text(s[start:i])
				n.control(b, s[i+1:end-1])
				i, start = end, end
				continue
			}
		case '`':
			if end := atomEnd(s, i); end > i+1 {
				text(s[start:i])
				b.WriteString(`<code>`)
				b.WriteString(escapeText(decodeEntities(s[i+1 : end-1])))
				b.WriteString(`</code>`)
				i, start = end, end
				continue
			}
		case '*', '_', '~':
			if opens(s, i) {
				if j := closer(s, i); j > 0 {
					text(s[start:i])
					tag := map[byte]string{'*': "b", '_': "i", '~': "s"}[c]
					b.WriteString("<" + tag + ">")
					n.inline(b, s[i+1:j])
					b.WriteString("</" + tag + ">")
					i, start = j+1, j+1
					continue
				}
			}
		}
		i++
	}
	text(s[start:])
}

// atomEnd returns the end (exclusive) of the <…> sequence or `code` span
// starting at s[i], or i when there is none: both end on the same line and
// are not empty.
func atomEnd(s string, i int) int {
	closeCh := byte('>')
	if s[i] == '`' {
		closeCh = '`'
	}
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\n':
			return i
		case closeCh:
			if j == i+1 {
				return i
			}
			return j + 1
		case '<':
			if closeCh == '>' {
				return i
			}
		}
	}
	return i
}

// opens reports whether the marker s[i] can open formatting: at the start
// or after a character that is not a letter or digit, and followed by a
// character that is not a space.
func opens(s string, i int) bool {
	if i+1 >= len(s) || isSpaceByte(s[i+1]) || s[i+1] == s[i] {
		return false
	}
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return !unicode.IsLetter(r) && !unicode.IsDigit(r)
}

// closer finds the marker that closes the one at s[i] on the same line:
// preceded by a non-space, followed by the end or a non-alphanumeric, and
// not inside a <…> sequence or code span. It returns -1 when there is none.
func closer(s string, i int) int {
	m := s[i]
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\n':
			return -1
		case '<', '`':
			if end := atomEnd(s, j); end > j+1 {
				j = end - 1
				continue
			}
		case m:
			if j == i+1 || isSpaceByte(s[j-1]) {
				continue
			}
			if j+1 < len(s) {
				r, _ := utf8.DecodeRuneInString(s[j+1:])
				if unicode.IsLetter(r) || unicode.IsDigit(r) {
					continue
				}
			}
			return j
		}
	}
	return -1
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// control renders the inside of a <…> sequence.
func (n Names) control(b *strings.Builder, inner string) {
	target, label, hasLabel := strings.Cut(inner, "|")
	switch {
	case strings.HasPrefix(target, "@"):
		id := target[1:]
		name := n.Users[id]
		if name == "" && hasLabel {
			name = strings.TrimPrefix(decodeEntities(label), "@")
		}
		mention(b, "user", "@"+cmpOr(name, id), id)
	case strings.HasPrefix(target, "#"):
		id := target[1:]
		name := n.Channels[id]
		if name == "" && hasLabel {
			name = strings.TrimPrefix(decodeEntities(label), "#")
		}
		mention(b, "channel", "#"+cmpOr(name, id), id)
	case strings.HasPrefix(target, "!subteam^"):
		id := strings.TrimPrefix(target, "!subteam^")
		name := n.Groups[id]
		if name == "" && hasLabel {
			name = strings.TrimPrefix(decodeEntities(label), "@")
		}
		mention(b, "group", "@"+cmpOr(name, id), id)
	case target == "!here" || target == "!channel" || target == "!everyone":
		mention(b, "special", "@"+target[1:], "")
	case strings.HasPrefix(target, "!date^"):
		n.date(b, target, decodeEntities(label))
	case strings.HasPrefix(target, "!"):
		// An unknown command shows its label, or nothing to click.
		b.WriteString(escapeText(decodeEntities(cmpOr(label, "<"+inner+">"))))
	default:
		href, ok := safeURL(decodeEntities(target))
		if !ok {
			b.WriteString(escapeText(decodeEntities("<" + inner + ">")))
			return
		}
		shown := decodeEntities(cmpOr(label, strings.TrimPrefix(target, "mailto:")))
		fmt.Fprintf(b, `<a href="%s" target="_blank" rel="noopener noreferrer">%s</a>`,
			html.EscapeString(href), escapeText(shown))
	}
}

func mention(b *strings.Builder, kind, shown, id string) {
	b.WriteString(`<span class="mention mention-` + kind + `"`)
	if id != "" {
		b.WriteString(` title="` + html.EscapeString(strings.ToValidUTF8(id, "\uFFFD")) + `"`)
	}
	b.WriteString(`>` + escapeText(shown) + `</span>`)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// safeURL returns u when it may be shown as a link
// (interaction.IsLinkURL).
func safeURL(u string) (string, bool) { return u, interaction.IsLinkURL(u) }

// date renders <!date^UNIX^FORMAT[^LINK]|fallback> in Names' time zone.
func (n Names) date(b *strings.Builder, target, fallback string) {
	parts := strings.SplitN(strings.TrimPrefix(target, "!date^"), "^", 3)
	sec, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil || len(parts) < 2 {
		b.WriteString(escapeText(fallback))
		return
	}
	t := time.Unix(sec, 0).In(n.loc())
	shown := formatDate(parts[1], t, n.now().In(n.loc()))
	fmt.Fprintf(b, `<time datetime="%s" title="%s">%s</time>`,
		t.UTC().Format(time.RFC3339), html.EscapeString(strings.ToValidUTF8(fallback, "\uFFFD")), escapeText(shown))
}

// formatDate expands Slack's date tokens.
func formatDate(format string, t, now time.Time) string {
	day := func(long, pretty bool) string {
		if pretty {
			switch d := civilDays(t) - civilDays(now); d {
			case 0:
				return "today"
			case -1:
				return "yesterday"
			case 1:
				return "tomorrow"
			}
		}
		if long {
			return t.Format("Monday, January ") + ordinal(t.Day()) + t.Format(", 2006")
		}
		return t.Format("January ") + ordinal(t.Day()) + t.Format(", 2006")
	}
	return strings.NewReplacer(
		"{date_num}", t.Format("2006-01-02"),
		"{date_slash}", t.Format("01/02/2006"),
		"{date_long_pretty}", day(true, true),
		"{date_long}", day(true, false),
		"{date_pretty}", day(false, true),
		"{date_short_pretty}", shortPretty(t, now),
		"{date_short}", t.Format("Jan 2, 2006"),
		"{date}", day(false, false),
		"{time_secs}", t.Format("15:04:05"),
		"{time}", t.Format("15:04"),
		"{ago}", ago(now.Sub(t)),
	).Replace(format)
}

func shortPretty(t, now time.Time) string {
	switch civilDays(t) - civilDays(now) {
	case 0:
		return "today"
	case -1:
		return "yesterday"
	case 1:
		return "tomorrow"
	}
	return t.Format("Jan 2, 2006")
}

func civilDays(t time.Time) int {
	y, m, d := t.Date()
	return int(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

func ordinal(d int) string {
	suffix := "th"
	switch {
	case d%100 >= 11 && d%100 <= 13:
	case d%10 == 1:
		suffix = "st"
	case d%10 == 2:
		suffix = "nd"
	case d%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(d) + suffix
}

func ago(d time.Duration) string {
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		s = plural(int(d/time.Minute), "minute")
	case d < 24*time.Hour:
		s = plural(int(d/time.Hour), "hour")
	default:
		s = plural(int(d/(24*time.Hour)), "day")
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

// emoji maps the shortcodes a bot is likely to use; others stay as typed.
var emoji = map[string]string{
	"white_check_mark": "✅", "heavy_check_mark": "✔️", "x": "❌", "warning": "⚠️",
	"hourglass": "⌛", "hourglass_flowing_sand": "⏳", "stopwatch": "⏱️", "alarm_clock": "⏰",
	"no_entry": "⛔", "no_entry_sign": "🚫", "tada": "🎉", "wave": "👋", "eyes": "👀",
	"thumbsup": "👍", "+1": "👍", "thumbsdown": "👎", "-1": "👎", "question": "❓",
	"grey_question": "❔", "robot_face": "🤖", "speech_balloon": "💬", "lock": "🔒",
	"bell": "🔔", "memo": "📝", "pencil": "✏️", "pencil2": "✏️", "rocket": "🚀",
	"bulb": "💡", "fire": "🔥", "ok": "🆗", "information_source": "ℹ️", "clipboard": "📋",
	"leftwards_arrow_with_hook": "↩️", "arrows_counterclockwise": "🔄", "zzz": "💤",
}

// replaceEmoji replaces known :shortcodes:.
func replaceEmoji(s string) string {
	if strings.Count(s, ":") < 2 {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, ':')
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i+1:], ':')
		if j < 0 {
			break
		}
		code := s[i+1 : i+1+j]
		if e, ok := emoji[code]; ok {
			b.WriteString(s[:i] + e)
			s = s[i+1+j+1:]
			continue
		}
		b.WriteString(s[:i+1])
		s = s[i+1:]
	}
	b.WriteString(s)
	return b.String()
}
