package blocks

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
)

// detailsNote ends a question section whose text was shortened.
const detailsNote = "\n_Shortened: press *Details* for the full text._"

// questionBlocks renders question i of a pending ask: its text, its
// controls and, when there is something to say, its progress.
func questionBlocks(v View, i int) []slack.Block {
	q := v.Request.Questions[i]
	opts, optsCut := menuOptions(q)
	text, textCut := questionText(q, maxSection, detailsNote)
	sec := slack.NewSectionBlock(mrkdwn(text), nil, approveAccessory(v, i),
		slack.SectionBlockOptionBlockID(blockID(v, i, kindQuestion)))
	controls := controlsBlocks(v, i, opts, textCut || optsCut)
	p := progressBlock(v, i)
	if c, ok := p.(*slack.ContextBlock); ok && strings.HasSuffix(c.BlockID, "."+string(kindProposed)) {
		// the proposed text is read before "Use as is"
		return append([]slack.Block{sec, p}, controls...)
	}
	out := append([]slack.Block{sec}, controls...)
	if p != nil {
		out = append(out, p)
	}
	return out
}

// questionText renders *header* (plain text), question and detail
// (Markdown, converted to mrkdwn) of at most max units. When they do not
// fit, the question and the detail are shortened (the detail keeping at
// least a third of the room when long) and cutNote is appended; cut
// reports that.
func questionText(q interaction.Question, max int, cutNote string) (text string, cut bool) {
	head := ""
	if h := oneLine(q.Header); h != "" {
		head = "*" + clipPlain(h, 400) + "*\n"
	}
	question, detail := markdown(strings.TrimSpace(q.Question)), markdown(strings.TrimSpace(q.Detail))
	label := ""
	if isPlanReview(q) {
		label = "*Plan:*\n"
	}
	sep := ""
	if len(detail) > 0 {
		sep = "\n\n" + label
	}
	lq, ld := toksLen(question), toksLen(detail)
	if textLen(head)+lq+textLen(sep)+ld <= max {
		return head + joinToks(question) + sep + joinToks(detail), false
	}
	room := max - textLen(head) - textLen(cutNote) - textLen(sep)
	qRoom := min(lq, room-min(ld, room/3))
	cq := clipToks(question, qRoom)
	text = head + cq
	if len(detail) > 0 {
		text += sep + clipToks(detail, room-textLen(cq))
	}
	return text + cutNote, true
}

func isPlanReview(q interaction.Question) bool {
	return q.Intent != nil && q.Intent.Kind == interaction.IntentPlanReview
}

// menuOptions returns the options of q for a menu: text and description
// shortened to 75, value the option index. Texts that end up equal are
// numbered. cut reports whether any label or description was shortened.
func menuOptions(q interaction.Question) (opts []*slack.OptionBlockObject, cut bool) {
	opts = make([]*slack.OptionBlockObject, len(q.Options))
	count := map[string]int{}
	for j, o := range q.Options {
		label := oneLine(o.Label)
		cut = cut || textLen(label) > maxOptionText
		opts[j] = &slack.OptionBlockObject{Text: plain(clip(label, maxOptionText)), Value: strconv.Itoa(j)}
		if d := oneLine(mdPlain(o.Description)); d != "" {
			cut = cut || textLen(d) > maxOptionText
			opts[j].Description = plain(clip(d, maxOptionText))
		}
		count[opts[j].Text.Text]++
	}
	for j, o := range opts {
		if count[o.Text.Text] > 1 {
			o.Text = plain(clip(fmt.Sprintf("%d. %s", j+1, oneLine(q.Options[j].Label)), maxOptionText))
		}
	}
	return opts, cut
}

// optionIndexes returns the indexes of the labels of q among its options,
// ascending, once each; unknown labels are ignored.
func optionIndexes(q interaction.Question, labels []string) []int {
	idx := make(map[string]int, len(q.Options))
	for j, o := range q.Options {
		idx[o.Label] = j
	}
	seen := map[int]bool{}
	var out []int
	for _, l := range labels {
		if j, ok := idx[l]; ok && !seen[j] {
			seen[j] = true
			out = append(out, j)
		}
	}
	sort.Ints(out)
	return out
}

// approveAccessory is the primary button that approves a plan-review
// question: an action of KindSelect whose value is the approve option index.
func approveAccessory(v View, i int) *slack.Accessory {
	q := v.Request.Questions[i]
	if !isPlanReview(q) || interaction.Spec(v.Request, i).Tap { // a tap kind draws the approve option itself
		return nil
	}
	js := optionIndexes(q, []string{q.Intent.Approve})
	if len(js) == 0 {
		return nil
	}
	b := button(v, i, KindSelect, clip(oneLine(q.Options[js[0]].Label), maxOptionText))
	b.Value = strconv.Itoa(js[0])
	b.Style = slack.StylePrimary
	return slack.NewAccessory(b)
}

func button(v View, q int, k Kind, text string) *slack.ButtonBlockElement {
	return slack.NewButtonBlockElement(ActionID(Ref{AskID: v.AskID, Rev: v.Rev, Question: q, Kind: k}), "", plain(text))
}

// controlsBlocks are the rows of option elements of question i its kind
// draws, then its controls block: the last option elements, "Other…" (or
// "Answer…") unless the question allows no other text, "Skip" unless it
// is required and, when something was shortened, "Details". A controls
// block left with no element is left out (Slack refuses it).
func controlsBlocks(v View, i int, opts []*slack.OptionBlockObject, details bool) []slack.Block {
	var out []slack.Block
	var elems []slack.BlockElement
	other := "Answer…"
	if draw := drawers[interaction.KindOf(v.Request, i)]; draw != nil {
		var rows [][]slack.BlockElement
		rows, elems = draw(v, i, opts)
		for k, row := range rows {
			out = append(out, slack.NewActionBlock(ActionID(Ref{AskID: v.AskID, Rev: v.Rev, Question: i, Kind: kindRow, Item: k + 1}), row...))
		}
		other = "Other…"
	}
	q := v.Request.Questions[i]
	if q.Default != "" {
		use := button(v, i, KindUse, "Use as is")
		use.Style = slack.StylePrimary
		elems = append(elems, use)
		other = "Edit…"
	}
	if q.OtherAllowed() || q.Default != "" {
		elems = append(elems, button(v, i, KindOther, other))
	}
	if !v.Request.Questions[i].Required {
		elems = append(elems, button(v, i, KindSkip, "Skip"))
	}
	if details {
		elems = append(elems, button(v, i, KindDetails, "Details"))
	}
	if len(elems) > 0 {
		out = append(out, slack.NewActionBlock(blockID(v, i, kindControls), elems...))
	}
	return out
}

// progressBlock says that question i was answered with custom text or
// skipped; nil otherwise (a selection shows in the menu itself).
func progressBlock(v View, i int) slack.Block {
	p := progressAt(v, i)
	var text string
	switch {
	case p.Custom != "":
		text = "Other: " + clipEscaped(oneLine(p.Custom), maxProgressText)
	case p.Skipped:
		text = "Skipped"
	case p.Note != "" && len(p.Selected) > 0:
		text = clipPlain(oneLine(p.Selected[0]), maxOptionText) + ". Why: " + clipEscaped(oneLine(p.Note), maxProgressText)
	case v.Request.Questions[i].Default != "":
		// the proposed text, where the progress line would be: one block
		// either way
		return slack.NewContextBlock(blockID(v, i, kindProposed),
			mrkdwn("*Proposed:* "+clipEscaped(strings.TrimSpace(v.Request.Questions[i].Default), maxSection-100)))
	default:
		return nil
	}
	return slack.NewContextBlock(blockID(v, i, kindProgress), mrkdwn(text))
}

// bottomBlock holds "Submit" and "Cancel", or only "Cancel" for OneTap,
// or only "Submit" for a team ask (one person cannot cancel it, and each
// person's choice counts only when they submit it); nil for a team ask
// whose tap is a response (interaction.TapResponds).
func bottomBlock(v View) slack.Block {
	if v.Team != nil && interaction.TapResponds(v.Request) {
		if v.HandOff { // a tap is the response: only "Hand off…" is left
			return slack.NewActionBlock(blockID(v, -1, kindControls), withHandoff(v)...)
		}
		return nil
	}
	if v.Team != nil {
		submit := button(v, -1, KindSubmit, "Submit")
		submit.Style = slack.StylePrimary
		return slack.NewActionBlock(blockID(v, -1, kindControls), withHandoff(v, submit)...)
	}
	cancel := button(v, -1, KindCancel, "Cancel")
	cancel.Style = slack.StyleDanger
	cancel.Confirm = cancelConfirm(len(v.Request.Questions))
	id := blockID(v, -1, kindControls)
	if interaction.OneTap(v.Request) {
		return slack.NewActionBlock(id, withHandoff(v, cancel)...)
	}
	submit := button(v, -1, KindSubmit, "Submit")
	submit.Style = slack.StylePrimary
	return slack.NewActionBlock(id, withHandoff(v, submit, cancel)...)
}

// withHandoff returns elems with "Hand off…" when v offers it: last, or
// before Cancel, which stays last.
func withHandoff(v View, elems ...*slack.ButtonBlockElement) []slack.BlockElement {
	out := make([]slack.BlockElement, 0, len(elems)+1)
	for i, e := range elems {
		if v.HandOff && i == len(elems)-1 && e.Style == slack.StyleDanger {
			out = append(out, handoffButton(v))
			v.HandOff = false
		}
		out = append(out, e)
	}
	if v.HandOff {
		out = append(out, handoffButton(v))
	}
	return out
}

func cancelConfirm(n int) *slack.ConfirmationBlockObject {
	title, text := "Cancel this question?", "The agent will be told that you cancelled it."
	if n > 1 {
		title, text = "Cancel these questions?", "The agent will be told that you cancelled them."
	}
	return &slack.ConfirmationBlockObject{
		Title: plain(title), Text: plain(text),
		Confirm: plain("Yes, cancel"), Deny: plain("Keep it"), Style: slack.StyleDanger,
	}
}
