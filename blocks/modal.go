package blocks

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
)

// Callback ids of the modals.
const (
	CallbackOther   = "slackask_other"   // OtherModal
	CallbackDetails = "slackask_details" // DetailsModal
	CallbackNote    = "slackask_note"    // NoteModal
)

// The block_id and action_id of OtherModal's text input.
const (
	CustomBlockID  = "custom"
	CustomActionID = "text"
)

const (
	maxCustom = interaction.MaxCustomLen // plain_text_input max_length
	// maxModalText bounds the JSON size of the texts of a modal, well
	// inside Slack's ~250 KB view limit.
	maxModalText = 200_000
)

// OtherModal is the modal of the "Other…" button (or "Answer…" for a
// question without options) of question q: the question, and a multiline
// plain_text_input (CustomBlockID/CustomActionID, max_length 3000)
// prefilled with the current custom text; callback_id CallbackOther, submit
// "Submit", close "Back". privateMetadata is passed through unchanged: the
// caller keeps it within Slack's 3000 characters. For a question index out
// of range the modal only says so and has no submit.
func OtherModal(v View, q int, privateMetadata string) slack.ModalViewRequest {
	// The title says what the modal is for, the field's label what to
	// type: never the same words twice.
	m := modal("Answer the question", "Back", CallbackOther, privateMetadata)
	if q < 0 || q >= len(v.Request.Questions) {
		m.Blocks.BlockSet = []slack.Block{section("This question is no longer available.", "missing")}
		return m
	}
	question := v.Request.Questions[q]
	if len(question.Options) > 0 {
		m.Title = plain("Other answer")
	}
	text, _ := questionText(interaction.Question{Question: question.Question, Header: question.Header}, maxSection, "")
	input := slack.NewPlainTextInputBlockElement(plain("Type your answer"), CustomActionID)
	input.Multiline, input.MaxLength = true, maxCustom
	input.InitialValue = clip(cmpOr(progressAt(v, q).Custom, question.Default), maxCustom)
	if question.Default != "" {
		m.Title = plain("Edit the answer")
	}
	m.Blocks.BlockSet = []slack.Block{
		section(text, "question"),
		slack.NewInputBlock(CustomBlockID, plain("Your answer"), nil, input),
	}
	m.Submit = plain("Submit")
	return m
}

func modal(title, close, callback, privateMetadata string) slack.ModalViewRequest {
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		Title:           plain(title),
		Close:           plain(close),
		CallbackID:      callback,
		PrivateMetadata: privateMetadata,
	}
}

// CustomText returns the text typed into OtherModal from the state of its
// view_submission, trimmed; false when it is blank or missing.
func CustomText(state *slack.ViewState) (string, bool) {
	if state == nil {
		return "", false
	}
	s := strings.TrimSpace(state.Values[CustomBlockID][CustomActionID].Value)
	return s, s != ""
}

// NoteModal is the "Why?" form of option j of question q, opened when a
// person picks an option that asks for a note: the question, the option
// chosen and a multiline plain_text_input (CustomBlockID/CustomActionID),
// optional when the option's note is optional; callback_id CallbackNote,
// submit "Send", close "Back". privateMetadata as for OtherModal.
func NoteModal(v View, q, j int, privateMetadata string) slack.ModalViewRequest {
	m := modal("Why?", "Back", CallbackNote, privateMetadata)
	if q < 0 || q >= len(v.Request.Questions) || j < 0 || j >= len(v.Request.Questions[q].Options) {
		m.Blocks.BlockSet = []slack.Block{section("This question is no longer available.", "missing")}
		return m
	}
	question := v.Request.Questions[q]
	o := question.Options[j]
	text, _ := questionText(interaction.Question{Question: question.Question, Header: question.Header}, maxSection-200, "")
	text += "\n\nYou chose *" + clipPlain(oneLine(o.Label), maxOptionText) + "*."
	input := slack.NewPlainTextInputBlockElement(plain("Say why"), CustomActionID)
	input.Multiline, input.MaxLength = true, maxCustom
	label := "Your reason"
	if o.Note == interaction.NoteOptional {
		label = "Your reason (optional)"
	}
	in := slack.NewInputBlock(CustomBlockID, plain(label), nil, input)
	in.Optional = o.Note == interaction.NoteOptional
	m.Blocks.BlockSet = []slack.Block{section(text, "question"), in}
	m.Submit = plain("Send")
	return m
}

// DetailsModal shows question q in full: header, question, detail (the
// plan of a plan-review question) and, when the menu shortened any, the
// options with their full labels and descriptions; mrkdwn sections of at
// most 3000 characters, within 100 blocks and well inside the view size
// limit (what does not fit is cut with a note). callback_id
// CallbackDetails, close "Close", no submit; privateMetadata is passed
// through unchanged (the caller keeps it within 3000 characters).
func DetailsModal(v View, q int, privateMetadata string) slack.ModalViewRequest {
	m := modal("Details", "Close", CallbackDetails, privateMetadata)
	if q < 0 || q >= len(v.Request.Questions) {
		m.Blocks.BlockSet = []slack.Block{section("This question is no longer available.", "missing")}
		return m
	}
	question := v.Request.Questions[q]
	d := &details{blocksLeft: MaxModalBlocks - 1, bytesLeft: maxModalText}
	if h := oneLine(question.Header); h != "" {
		d.add("*" + clipPlain(h, 400) + "*")
	}
	d.addText(markdown(strings.TrimSpace(question.Question)))
	if detail := strings.TrimSpace(question.Detail); detail != "" {
		title := "*Details*"
		if isPlanReview(question) {
			title = "*Plan*"
		}
		d.add(title)
		d.addText(markdown(detail))
	}
	if _, cut := menuOptions(question); cut {
		d.add("*Options*")
		d.addText(optionList(question))
	}
	if d.cut {
		d.blocks = append(d.blocks, section("_The rest is too long to show here._", "details-cut"))
	}
	m.Blocks.BlockSet = d.blocks
	return m
}

// optionList lists every option: "• label — description", the label plain
// text, the description Markdown.
func optionList(q interaction.Question) []tok {
	var out []tok
	for _, o := range q.Options {
		out = append(out, tok{s: "• "})
		for _, p := range plainPieces(oneLine(o.Label)) {
			out = append(out, tok{s: p})
		}
		if d := strings.TrimSpace(o.Description); d != "" {
			out = append(out, tok{s: " — "})
			for _, t := range unquote(markdown(d)) {
				if t == nlTok {
					t = tok{s: " "}
				}
				out = append(out, t)
			}
		}
		out = append(out, nlTok)
	}
	return out
}

// details collects the sections of DetailsModal within a budget of blocks
// (one is kept for the note that the rest was cut) and of JSON bytes.
type details struct {
	blocks     []slack.Block
	blocksLeft int
	bytesLeft  int
	cut        bool
}

// add appends one section of ready mrkdwn, unless out of budget.
func (d *details) add(text string) {
	if d.cut {
		return
	}
	n := jsonLen(text)
	if d.blocksLeft <= 0 || n > d.bytesLeft {
		d.cut = true
		return
	}
	d.blocksLeft--
	d.bytesLeft -= n
	d.blocks = append(d.blocks, section(text, fmt.Sprintf("details-%d", len(d.blocks))))
}

// addText appends converted text in sections.
func (d *details) addText(ts []tok) {
	for _, chunk := range splitToks(ts, maxSection) {
		d.add(chunk)
	}
}

func jsonLen(s string) int {
	b, _ := json.Marshal(s)
	return len(b)
}
