package blocks

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	gmtext "github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/slackask/slackask/interaction"
)

// This file converts Markdown as agents write it (CommonMark with
// ~~strikethrough~~) to Slack mrkdwn. The result is a list of tokens that
// are never cut, so that shortening it to a Slack limit never splits an
// entity or a link, and never leaves a formatting marker open: every
// opener knows its closer, and a cut closes what is open.
//
// Nothing the agent writes can ping or link on its own: &, < and > are
// escaped, @here, @channel and @everyone get a zero-width joiner after the
// "@", and links are only made from Markdown links to http, https and
// mailto URLs.

// tok is one piece of converted mrkdwn.
type tok struct {
	s     string // the text it emits
	open  string // for an opener: the closer that ends it
	close bool   // a closer: ends the innermost open opener
	mark  bool   // a formatting character written as text (see inertMarks)
	quote bool   // the "> " that starts a quoted line
	label string // for a link: its label, escaped, as plain text shows it
}

var quoteTok = tok{s: "> ", quote: true}

// unquote drops the quote marks of ts: Slack quotes only a line that starts
// with ">", so a quote inside a quote or a list item is shown as its text.
func unquote(ts []tok) []tok {
	out := ts[:0:0]
	for _, t := range ts {
		if !t.quote {
			out = append(out, t)
		}
	}
	return out
}

var nlTok = tok{s: "\n"}

var mdParser = goldmark.New(goldmark.WithExtensions(extension.Strikethrough)).Parser()

// maxNesting bounds how deep lists and quotes nest. Deeper text is shown
// without further indentation; a line that opens more containers than
// this at once is not Markdown an agent writes, and parsing it costs time
// that grows with the square of its depth, so such text is shown as
// written.
const maxNesting = 16

// markdown converts Markdown source to mrkdwn tokens. Source that converts
// to nothing visible (a lone ">", an empty link) is shown as written.
func markdown(src string) []tok {
	src = strings.ToValidUTF8(src, "\uFFFD")
	if tooDeep(src) {
		return inertMarks(literal(src, true))
	}
	b := []byte(src)
	doc := mdParser.Parse(gmtext.NewReader(b), parser.WithContext(parser.NewContext()))
	r := &mdRender{src: b}
	out := r.container(doc, "\n\n")
	if !hasText(out) && strings.TrimSpace(src) != "" {
		return inertMarks(literal(src, true))
	}
	return inertMarks(out)
}

// tooDeep reports whether a line of src starts with more than maxNesting
// container markers.
func tooDeep(src string) bool {
	for line := range strings.Lines(src) {
		if markerDepth(line) > maxNesting {
			return true
		}
	}
	return false
}

// markerDepth counts the container markers (">", "-", "*", "+", "1.",
// "1)") that start line, up to one more than maxNesting.
func markerDepth(line string) int {
	depth, i := 0, 0
	for depth <= maxNesting {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i >= len(line) {
			return depth
		}
		j := i
		for j < len(line) && j-i < 9 && line[j] >= '0' && line[j] <= '9' {
			j++
		}
		switch {
		case line[i] == '>':
			i++
		case strings.IndexByte("-*+", line[i]) >= 0 && (i+1 == len(line) || isBlankByte(line[i+1])):
			i++
		case j > i && j < len(line) && (line[j] == '.' || line[j] == ')') && (j+1 == len(line) || isBlankByte(line[j+1])):
			i = j + 1
		default:
			return depth
		}
		depth++
	}
	return depth
}

func isBlankByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// inertMarks replaces each formatting character that Markdown left as text
// (escaped, or flanked by space) with a look-alike, as Slack would format
// with it; inside a word, as in snake_case, Slack does not, so it stays.
func inertMarks(ts []tok) []tok {
	for i, t := range ts {
		if !t.mark {
			continue
		}
		r, _ := utf8.DecodeRuneInString(t.s)
		if i > 0 && i+1 < len(ts) && endsWord(ts[i-1].s) && startsWord(ts[i+1].s) {
			continue
		}
		ts[i] = tok{s: plainRune(r)}
	}
	return ts
}

func endsWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return isWordRune(r)
}

func startsWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return isWordRune(r)
}

// mdPlain converts Markdown source to plain text: the words without
// formatting, for plain_text objects (which Slack never formats).
func mdPlain(src string) string {
	var b strings.Builder
	for _, t := range markdown(src) {
		switch {
		case t.label != "":
			b.WriteString(t.label)
		case t.open == "" && !t.close:
			b.WriteString(t.s)
		}
	}
	return unescapeEntities(b.String())
}

// unescapeEntities reverses escapeRune.
func unescapeEntities(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

type mdRender struct {
	src   []byte
	depth int  // lists and quotes open around the block being rendered
	bold  bool // inside *…*: Slack does not nest a marker in itself
	ital  bool
	del   bool
}

// container renders the blocks of n separated by sep; a list follows the
// block before it on the next line, as agents write "Options:\n- a".
func (r *mdRender) container(n ast.Node, sep string) []tok {
	var out []tok
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		b := r.block(c)
		if len(b) == 0 {
			continue
		}
		if len(out) > 0 {
			out = append(out, nlTok)
			if _, list := c.(*ast.List); !list && sep == "\n\n" {
				out = append(out, nlTok)
			}
		}
		out = append(out, b...)
	}
	return out
}

func (r *mdRender) block(n ast.Node) []tok {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return trimNewlines(r.inlines(n))
	case *ast.Heading:
		return r.wrap("*", &r.bold, func() []tok { return trimNewlines(r.inlines(n)) })
	case *ast.ThematicBreak:
		return []tok{{s: "───"}}
	case *ast.CodeBlock, *ast.FencedCodeBlock:
		return codeBlock(r.lines(n))
	case *ast.HTMLBlock:
		s := r.lines(n)
		if n.HasClosure() {
			s += string(n.ClosureLine.Value(r.src))
		}
		return literal(strings.TrimRight(s, "\n"), true)
	case *ast.Blockquote, *ast.List:
		if r.depth >= maxNesting {
			return r.container(n, "\n")
		}
		r.depth++
		defer func() { r.depth-- }()
	}
	switch n := n.(type) {
	case *ast.Blockquote:
		return prefixLines(unquote(r.container(n, "\n\n")), quoteTok, quoteTok)
	case *ast.List:
		var out []tok
		i := n.Start
		for item := n.FirstChild(); item != nil; item = item.NextSibling() {
			marker := "• "
			if n.IsOrdered() {
				marker = strconv.Itoa(i) + ". "
				i++
			}
			body := unquote(r.container(item, "\n"))
			if len(out) > 0 {
				out = append(out, nlTok)
			}
			out = append(out, prefixLines(body, tok{s: marker}, tok{s: "    "})...)
		}
		return out
	}
	return r.container(n, "\n\n")
}

// lines returns the raw lines of a code or HTML block.
func (r *mdRender) lines(n ast.Node) string {
	var b strings.Builder
	ls := n.Lines()
	for i := 0; i < ls.Len(); i++ {
		seg := ls.At(i)
		b.Write(seg.Value(r.src))
	}
	return b.String()
}

func codeBlock(s string) []tok {
	out := []tok{{s: "```", open: "```"}, nlTok}
	out = append(out, literal(strings.TrimRight(s, "\n"), false)...)
	return append(out, nlTok, tok{s: "```", close: true})
}

// inlines renders the inline children of n.
func (r *mdRender) inlines(n ast.Node) []tok {
	var out []tok
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		out = append(out, r.inline(c)...)
	}
	return out
}

func (r *mdRender) inline(n ast.Node) []tok {
	switch n := n.(type) {
	case *ast.Text:
		v := n.Segment.Value(r.src)
		if !n.IsRaw() {
			v = util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(v)))
		}
		out := literal(string(v), true)
		if n.SoftLineBreak() || n.HardLineBreak() {
			out = append(out, nlTok)
		}
		return out
	case *ast.String:
		return literal(string(n.Value), true)
	case *ast.CodeSpan:
		var b strings.Builder
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			if t, ok := c.(*ast.Text); ok {
				b.Write(t.Segment.Value(r.src))
			} else if s, ok := c.(*ast.String); ok {
				b.Write(s.Value)
			}
		}
		// A code span is one line (CommonMark turns its line endings into
		// spaces), and a backtick cannot appear inside a Slack code span.
		code := strings.NewReplacer("\r\n", " ", "\n", " ", "`", "ˋ").Replace(b.String())
		if strings.TrimSpace(code) == "" {
			return literal(code, false)
		}
		out := []tok{{s: "`", open: "`"}}
		out = append(out, literal(code, false)...)
		return append(out, tok{s: "`", close: true})
	case *ast.Emphasis:
		if n.Level >= 2 {
			return r.wrap("*", &r.bold, func() []tok { return r.inlines(n) })
		}
		return r.wrap("_", &r.ital, func() []tok { return r.inlines(n) })
	case *extast.Strikethrough:
		return r.wrap("~", &r.del, func() []tok { return r.inlines(n) })
	case *ast.Link:
		return r.link(string(n.Destination), n)
	case *ast.Image:
		return r.link(string(n.Destination), n)
	case *ast.AutoLink:
		u := string(n.URL(r.src))
		if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(u), "mailto:") {
			u = "mailto:" + u
		}
		return linkTok(u, string(n.Label(r.src)))
	case *ast.RawHTML:
		var b strings.Builder
		for i := 0; i < n.Segments.Len(); i++ {
			seg := n.Segments.At(i)
			b.Write(seg.Value(r.src))
		}
		return literal(b.String(), true)
	}
	return r.inlines(n)
}

// wrap renders f between marker m, unless *in says that marker is open.
func (r *mdRender) wrap(m string, in *bool, f func() []tok) []tok {
	if *in {
		return f()
	}
	*in = true
	body := f()
	*in = false
	// Slack formatting does not span lines: wrap each line on its own.
	var out []tok
	for len(body) > 0 {
		end := slices.Index(body, nlTok)
		if end < 0 {
			end = len(body)
		}
		if line := body[:end]; hasText(line) {
			out = append(out, tok{s: m, open: m})
			out = append(out, line...)
			out = append(out, tok{s: m, close: true})
		} else {
			out = append(out, line...)
		}
		if end < len(body) {
			out = append(out, nlTok)
			end++
		}
		body = body[end:]
	}
	return out
}

func hasText(ts []tok) bool {
	for _, t := range ts {
		if t.open == "" && !t.close && strings.TrimSpace(t.s) != "" {
			return true
		}
	}
	return false
}

// link renders a Markdown link: <url|label> for a safe URL, else its label.
func (r *mdRender) link(dest string, n ast.Node) []tok {
	var label strings.Builder
	for _, t := range r.inlines(n) {
		if t.open == "" && !t.close {
			label.WriteString(t.s)
		}
	}
	l := unescapeEntities(strings.ReplaceAll(label.String(), "\n", " "))
	if strings.TrimSpace(l) == "" {
		l = dest
	}
	return linkTok(dest, l)
}

// maxLink bounds one link token, which is never cut: a longer link is
// shown as its label.
const maxLink = 1000

func linkTok(dest, label string) []tok {
	u, ok := safeLink(dest)
	label = strings.TrimSpace(label)
	if !ok {
		return literal(label, true)
	}
	var s string
	if label == dest || label == strings.TrimPrefix(dest, "mailto:") {
		s = "<" + u + ">"
	} else {
		s = "<" + u + "|" + escape(label) + ">"
	}
	if textLen(s) > maxLink {
		return literal(label, true)
	}
	return []tok{{s: s, label: escape(label)}}
}

// safeLink returns dest as it goes inside <…>: a link URL
// (interaction.IsLinkURL) with &, <, > escaped and | encoded.
func safeLink(dest string) (string, bool) {
	if !interaction.IsLinkURL(dest) {
		return "", false
	}
	return escape(strings.ReplaceAll(dest, "|", "%7C")), true
}

// literal renders text shown as written: one token per rune (escaped),
// newlines as their own tokens, @here, @channel and @everyone broken with a
// zero-width joiner (in code too: nothing an agent writes pings). With
// marks set, formatting characters are marked for inertMarks; in code they
// are shown as they are.
func literal(s string, marks bool) []tok {
	s = defusePings(s)
	out := make([]tok, 0, len(s))
	for _, r := range s {
		switch {
		case r == '\n':
			out = append(out, nlTok)
		case marks && isMarker(r):
			out = append(out, tok{s: string(r), mark: true})
		default:
			out = append(out, tok{s: escapeRune(r)})
		}
	}
	return out
}

func isMarker(r rune) bool { return r == '*' || r == '_' || r == '~' || r == '`' }

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// trimNewlines drops newlines at both ends.
func trimNewlines(ts []tok) []tok {
	for len(ts) > 0 && ts[0] == nlTok {
		ts = ts[1:]
	}
	for len(ts) > 0 && ts[len(ts)-1] == nlTok {
		ts = ts[:len(ts)-1]
	}
	return ts
}

// prefixLines starts the first line of ts with first and every other line
// with rest.
func prefixLines(ts []tok, first, rest tok) []tok {
	if len(ts) == 0 {
		return nil
	}
	out := make([]tok, 0, len(ts)+4)
	out = append(out, first)
	for _, t := range ts {
		out = append(out, t)
		if t == nlTok {
			out = append(out, rest)
		}
	}
	return out
}

func joinToks(ts []tok) string {
	var b strings.Builder
	for _, t := range ts {
		b.WriteString(t.s)
	}
	return b.String()
}

func toksLen(ts []tok) int {
	n := 0
	for _, t := range ts {
		n += textLen(t.s)
	}
	return n
}

// clipToks renders ts within max units: when it does not fit, it is cut
// between tokens, trailing space dropped, "…" added and every open marker
// closed.
func clipToks(ts []tok, max int) string {
	if toksLen(ts) <= max {
		return joinToks(ts)
	}
	n := fitToks(ts, max-textLen(ellipsis))
	kept, closers := closeOpen(ts[:n])
	return joinToks(kept) + ellipsis + closers
}

// fitToks returns how many tokens of ts fit in max units together with the
// closers of what they leave open.
func fitToks(ts []tok, max int) int {
	n, closing := 0, 0
	var stack []int
	for i, t := range ts {
		c := closing
		switch {
		case t.open != "":
			c += textLen(closerText(t.open))
		case t.close && len(stack) > 0:
			c -= stack[len(stack)-1]
		}
		if n+textLen(t.s)+c > max {
			return i
		}
		n += textLen(t.s)
		switch {
		case t.open != "":
			stack = append(stack, textLen(closerText(t.open)))
		case t.close && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
		closing = c
	}
	return len(ts)
}

// closeOpen drops trailing white space and empty openers from ts and
// returns what is left with the closers of the markers it leaves open.
func closeOpen(ts []tok) ([]tok, string) {
	for len(ts) > 0 {
		last := ts[len(ts)-1]
		if last.open != "" || !last.close && strings.TrimSpace(last.s) == "" {
			ts = ts[:len(ts)-1]
			continue
		}
		break
	}
	var stack []string
	for _, t := range ts {
		switch {
		case t.open != "":
			stack = append(stack, t.open)
		case t.close && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
	}
	var b strings.Builder
	for i := len(stack) - 1; i >= 0; i-- {
		b.WriteString(closerText(stack[i]))
	}
	return ts, b.String()
}

// closerText is what closes an opener when a cut closes it: a code block's
// fence goes on a line of its own.
func closerText(open string) string {
	if open == "```" {
		return "\n```"
	}
	return open
}

// openers returns the openers left open after ts, as they open a chunk:
// a code block's fence on a line of its own.
func openers(ts []tok) []tok {
	var stack []tok
	for _, t := range ts {
		switch {
		case t.open == "```":
			stack = append(stack, tok{s: "```\n", open: t.open})
		case t.open != "":
			stack = append(stack, t)
		case t.close && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
	}
	return stack
}

// splitToks cuts ts into chunks of at most limit units, preferring to cut
// after a newline, then after a space. Each chunk closes the markers open
// at its end and the next one opens them again. Blank chunks are dropped.
// limit must hold the longest token with the markers around it (a section's
// 3000 does: a link is at most maxLink).
func splitToks(ts []tok, limit int) []string {
	var out []string
	var reopen []tok
	for len(ts) > 0 {
		head := append(append([]tok(nil), reopen...), ts...)
		n := fitToks(head, limit)
		n = max(n, len(reopen)+1)
		if n < len(head) {
			n = tokBreak(head, len(reopen), n)
		}
		kept, closers := closeOpen(head[:n])
		chunk := strings.TrimLeft(joinToks(kept), "\n") + closers
		if hasText(kept) {
			out = append(out, chunk)
		}
		reopen = openers(head[:n])
		ts = head[n:]
	}
	return out
}

// tokBreak returns where to cut head[:n]: after its last newline, else
// after its last space, in the second half (past the reopened markers).
func tokBreak(head []tok, from, n int) int {
	for _, sep := range []string{"\n", " "} {
		for i := n - 1; i >= from+(n-from)/2; i-- {
			if head[i].s == sep && head[i].open == "" {
				return i + 1
			}
		}
	}
	return n
}

// plainRune returns r as plain text goes into mrkdwn: escaped, and the
// formatting markers replaced by look-alikes.
func plainRune(r rune) string {
	switch r {
	case '*':
		return "∗"
	case '_':
		return "ˍ"
	case '~':
		return "∼"
	case '`':
		return "ˋ"
	}
	return escapeRune(r)
}

// clipPlain renders plain text (a header, a name, a label) into mrkdwn
// within max units.
func clipPlain(s string, max int) string {
	pieces := plainPieces(s)
	if out := strings.Join(pieces, ""); textLen(out) <= max {
		return out
	}
	return clipStrings(pieces, max)
}

// plainPieces renders plain text into mrkdwn one rune at a time: escaped,
// pings defused, and each formatting character shown as a look-alike
// unless it stands inside a word (release_bot), where Slack does not
// format, so that text around it keeps its formatting (a header is shown
// in *bold*).
func plainPieces(s string) []string {
	rs := []rune(defusePings(s))
	out := make([]string, len(rs))
	for i, r := range rs {
		if isMarker(r) && i > 0 && i+1 < len(rs) && isWordRune(rs[i-1]) && isWordRune(rs[i+1]) {
			out[i] = string(r)
			continue
		}
		out[i] = plainRune(r)
	}
	return out
}

// defusePings puts a zero-width joiner after the "@" of @here, @channel
// and @everyone (any case), so that no client takes them for a mention.
func defusePings(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '@')
		if i < 0 {
			break
		}
		b.WriteString(s[:i+1])
		s = s[i+1:]
		for _, w := range []string{"here", "channel", "everyone"} {
			if len(s) >= len(w) && strings.EqualFold(s[:len(w)], w) {
				b.WriteString("\u200d")
				break
			}
		}
	}
	b.WriteString(s)
	return b.String()
}
