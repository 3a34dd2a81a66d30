package blocks

import (
	"fmt"
	"github.com/slackask/slackask/slackid"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

const ellipsis = "…"

// textLen is the length Slack limits are checked against here: UTF-16 code
// units, never less than the rune count.
func textLen(s string) int {
	n := 0
	for _, r := range s {
		n += runeLen(r)
	}
	return n
}

func runeLen(r rune) int {
	if r >= 0x10000 && r <= utf8.MaxRune {
		return 2
	}
	return 1
}

// escapeRune returns r as it goes into mrkdwn; invalid UTF-8 (reported as
// utf8.RuneError) comes out as U+FFFD.
func escapeRune(r rune) string {
	switch r {
	case '&':
		return "&amp;"
	case '<':
		return "&lt;"
	case '>':
		return "&gt;"
	}
	return string(r)
}

// escape makes caller text inert in mrkdwn: no mention, link or command,
// and no @here, @channel or @everyone.
func escape(s string) string {
	s = defusePings(s)
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteString(escapeRune(r))
	}
	return b.String()
}

// oneLine collapses every run of white space to one space and trims.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// clip shortens plain text to at most max units, ending it with "…" when cut.
func clip(s string, max int) string {
	if textLen(s) <= max {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	return clipPieces(s, max, func(r rune) string { return string(r) })
}

// clipEscaped escapes s and shortens the result to at most max units,
// ending it with "…" when cut, never inside an entity.
func clipEscaped(s string, max int) string {
	s = defusePings(s)
	e := escape(s)
	if textLen(e) <= max {
		return e
	}
	return clipPieces(s, max, escapeRune)
}

func clipPieces(s string, max int, piece func(rune) string) string {
	var pieces []string
	for _, r := range s {
		pieces = append(pieces, piece(r))
	}
	return clipStrings(pieces, max)
}

// clipStrings joins pieces, none of which is cut, within max units ending
// with "…".
func clipStrings(pieces []string, max int) string {
	var b strings.Builder
	n := 0
	for _, p := range pieces {
		l := textLen(p)
		if n+l > max-1 {
			break
		}
		b.WriteString(p)
		n += l
	}
	return strings.TrimRight(b.String(), " \t\n\u200d") + ellipsis
}

// plain returns a plain_text object.
func plain(s string) *slack.TextBlockObject {
	return &slack.TextBlockObject{Type: slack.PlainTextType, Text: s}
}

// mrkdwn returns a mrkdwn object that Slack does not auto-link.
func mrkdwn(s string) *slack.TextBlockObject {
	return &slack.TextBlockObject{Type: slack.MarkdownType, Text: s, Verbatim: true}
}

// mention returns the mrkdwn that mentions a user (U…/W…) or user group
// (S…) id, and false for anything else.
func mention(id string) (string, bool) {
	switch {
	case slackid.IsUser(id):
		return "<@" + id + ">", true
	case slackid.IsUserGroup(id):
		return "<!subteam^" + id + ">", true
	}
	return "", false
}

// slackDate renders t in each reader's time zone, with a UTC fallback.
func slackDate(t time.Time) string {
	return fmt.Sprintf("<!date^%d^{date_short_pretty} {time}|%s>", t.Unix(), plainDate(t))
}

func plainDate(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// joinCapped joins items with sep within max units; items that do not fit
// are summed up as " and N more".
func joinCapped(items []string, sep string, max int) string {
	var b strings.Builder
	n := 0
	for i, it := range items {
		add := it
		if i > 0 {
			add = sep + it
		}
		more := fmt.Sprintf(" and %d more", len(items)-i)
		if n+textLen(add)+textLen(more) > max && i < len(items)-1 || n+textLen(add) > max {
			b.WriteString(more)
			break
		}
		b.WriteString(add)
		n += textLen(add)
	}
	return b.String()
}
