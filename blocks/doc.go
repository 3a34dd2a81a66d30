// Package blocks renders an ask as one Slack Block Kit message and its
// modals, and reads answers back out of interaction payloads.
//
// # Message layout
//
// A pending ask renders as
//
//	head      section  mentions, "*Agent* has a question:"
//	who       context  "Who may answer: …", "Answer by <date>"
//	per question i (a divider before every question but the first):
//	  question  section  *header*, question, detail (plan for plan-review,
//	                     whose approve option is also a primary button in the
//	                     section's accessory)
//	  row       actions  (buttons only) rows of 5 option buttons but the
//	                     last; at most slackid.MaxButtonRows a message
//	  controls  actions  the question's kind's element (select, checkboxes,
//	                     the last row of buttons; see kinds.go) or none,
//	                     "Use as is" for a proposed default, "Other…"/
//	                     "Answer…"/"Edit…" (not when the question sets
//	                     allowOther false), "Skip" (not when it is
//	                     required), "Details" when text or options were
//	                     shortened; left out when empty
//	  progress  context  "Other: …", "Skipped" or "X. Why: …" (only when
//	                     so); or, in its place (before the controls), a
//	                     default's "Proposed: …"
//	controls  actions  "Submit" + "Cancel" ("Cancel" only for OneTap)
//
// That is at most 2 + 3·n + (n−1) + 1 = 42 blocks for n = MaxQuestions = 10
// questions, plus at most 8 rows of buttons: 50, Slack's most. An ended ask renders with no interactive
// element: head, per question the question section and (when answered) an
// answer section, dividers between, and one outcome context: at most
// 1 + 2·n + (n−1) + 1 = 31 blocks.
//
// # Team asks
//
// An ask that collects several people's responses (View.Team set) is one
// message everyone shares, so it never shows anyone's picks: no select has
// initial options and there are no progress lines (each person's picks
// live in their own draft, and their client shows them until the message
// is re-rendered). After the questions comes
//
//	team      context  "2 of 3 answered: @alice, @bob" (who, never what),
//	                   and "*No* ends the vote for everyone" for a veto
//	controls  actions  "Submit" only: every person presses their own, and
//	                   one person cannot cancel the team's ask (a veto
//	                   option, if the caller gave one, ends it); none
//	                   when a tap is a response (interaction.TapResponds)
//
// at most 2 + 2·n + (n−1) + 2 = 33 blocks (plus the rows of buttons). Ended, each answered question
// also gets a tally context ("Yes: 2 · No: 1"), and the outcome context a
// second element naming who responded: at most 1 + 3·n + (n−1) + 1 = 41
// blocks.
//
// # Ids
//
// Every block_id and action_id is "sa.<askID>.<rev>.<question>.<kind>" (see
// ActionID): it names the ask, the revision of the message (so Slack resets
// the state of updated blocks), the question index (-1 for ask-wide parts)
// and what the block or element is. Option values are option indexes, never
// labels.
//
// # Formatting, escaping and lengths
//
// Question text, detail and option descriptions are Markdown as agents
// write it (CommonMark with ~~strikethrough~~), parsed with goldmark and
// converted to mrkdwn: bold, italic, strike, code spans and blocks, links
// to http/https/mailto URLs, "• "/"1. " list lines (nested ones indented),
// "> " quotes, headings in bold (see markdown.go). In a menu, where Slack
// shows plain_text, a description keeps only its words. Headers, agent and
// person names and option labels are plain text: the formatting characters
// in them (but inside a word, where Slack does not format) are shown as
// look-alikes, so a "*" cannot end the bold around a header. A label is displayed so but returned as written: option values
// are indexes.
//
// Every caller-supplied string in a mrkdwn text or in the fallback text is
// escaped (&, <, >), "@here", "@channel" and "@everyone" get a zero-width
// joiner after the "@", and mrkdwn objects are sent with verbatim: true so
// Slack does not auto-link "#channel" or URLs either. The bot must not post
// with link_names or parse=full. Lengths are counted in UTF-16 code units,
// which is never less than the number of runes, so each Slack limit holds
// whichever way Slack counts; text is shortened with "…" on rune
// boundaries, never inside an escape entity or a link, and with every
// formatting marker that the cut leaves open closed.
package blocks
