package blocks

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
)

// The App Home inbox and the Answer modal it opens.

// KindAnswerForm is the action kind of a Home tab's "Answer" button: it
// opens AnswerModal for the ask.
const KindAnswerForm Kind = "answerform"

// CallbackAnswer is the callback id of AnswerModal.
const CallbackAnswer = "slackask_answer"

// Action ids of AnswerModal's inputs (their block ids are
// "q<index>.pick", "q<index>.other" and "q<index>.why").
const (
	AnswerPickID  = "pick"
	AnswerOtherID = "text"
	AnswerWhyID   = "why"
)

// Limits of the Home tab.
const (
	MaxHomeWaiting  = 20 // asks under "Waiting on you"
	MaxHomeAnswered = 10 // asks under "Recently answered by you"
)

// HomeAnswered is an ask under "Recently answered by you": the ask, the
// person's own answer and when they gave it.
type HomeAnswered struct {
	View   View
	Answer interaction.Answer
	At     time.Time
}

// Home is the App Home tab of one person: "Waiting on you" (each ask with
// its agent, first question, deadline and an Answer button; at most
// MaxHomeWaiting, in the order given) and "Recently answered by you" (at
// most MaxHomeAnswered), within Slack's 100 blocks.
func Home(waiting []View, answered []HomeAnswered) slack.HomeTabViewRequest {
	bs := []slack.Block{slack.NewHeaderBlock(plain("Waiting on you"), slack.HeaderBlockOptionBlockID("waiting"))}
	if len(waiting) == 0 {
		bs = append(bs, slack.NewContextBlock("waiting.none", mrkdwn("Nothing is waiting for your answer.")))
	}
	for i, v := range waiting {
		if i == MaxHomeWaiting {
			bs = append(bs, slack.NewContextBlock("waiting.more", mrkdwn(fmt.Sprintf("…and %d more, with later deadlines.", len(waiting)-MaxHomeWaiting))))
			break
		}
		text := "*" + agentName(v.Request) + "* asks: " + firstQuestion(v.Request)
		answer := slack.NewButtonBlockElement(ActionID(Ref{AskID: v.AskID, Rev: v.Rev, Question: -1, Kind: KindAnswerForm}), "", plain("Answer"))
		answer.Style = slack.StylePrimary
		bs = append(bs, slack.NewSectionBlock(mrkdwn(clipSection(text)), nil, slack.NewAccessory(answer), slack.SectionBlockOptionBlockID("waiting."+v.AskID)))
		due := "No deadline"
		if v.ExpiresAt != nil {
			due = "Answer by " + slackDate(*v.ExpiresAt)
		}
		bs = append(bs, slack.NewContextBlock("waiting."+v.AskID+".due", mrkdwn(due)))
	}
	bs = append(bs, slack.NewDividerBlock(), slack.NewHeaderBlock(plain("Recently answered by you"), slack.HeaderBlockOptionBlockID("answered")))
	if len(answered) == 0 {
		bs = append(bs, slack.NewContextBlock("answered.none", mrkdwn("Nothing yet.")))
	}
	for i, a := range answered {
		if i == MaxHomeAnswered {
			break
		}
		text := "*" + agentName(a.View.Request) + "* asked: " + firstQuestion(a.View.Request) + "\n" + answerLine(a.View.Request, a.Answer)
		bs = append(bs, slack.NewSectionBlock(mrkdwn(clipSection(text)), nil, nil, slack.SectionBlockOptionBlockID("answered."+a.View.AskID)))
	}
	return slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: bs}}
}

// answerLine sums up a person's answer in one escaped line.
func answerLine(r interaction.Request, a interaction.Answer) string {
	var parts []string
	for i, it := range a.Answers {
		if i >= len(r.Questions) {
			break
		}
		switch {
		case it.Custom != "":
			parts = append(parts, clipEscaped(oneLine(it.Custom), 200))
		case len(it.Selected) > 0:
			parts = append(parts, clipEscaped(strings.Join(it.Selected, ", "), 200))
		default:
			parts = append(parts, "skipped")
		}
	}
	return "You answered: " + strings.Join(parts, " · ")
}

func clipSection(s string) string {
	if textLen(s) <= maxSection {
		return s
	}
	return clip(s, maxSection)
}

// AnswerModal is the whole ask as a form (the Home tab's Answer): per
// question its text, a menu of its options (multi-select where it allows
// several) and, where it allows other text, a text input; every input is
// optional in Slack's form (required questions are checked on submit).
// callback_id CallbackAnswer, submit "Submit", close "Cancel";
// privateMetadata passed through.
func AnswerModal(v View, privateMetadata string) slack.ModalViewRequest {
	m := modal("Answer", "Cancel", CallbackAnswer, privateMetadata)
	bs := []slack.Block{section("*"+agentName(v.Request)+"* asks:", "agent")}
	perQuestion := max(maxSection/max(len(v.Request.Questions), 1), 500)
	for i, q := range v.Request.Questions {
		text, _ := questionText(q, perQuestion, "")
		if q.Required {
			text += "\n_Required_"
		}
		bs = append(bs, section(text, "q"+strconv.Itoa(i)))
		if len(q.Options) > 0 {
			opts, _ := menuOptions(q)
			var el slack.BlockElement
			if interaction.Spec(v.Request, i).Multi { // the kind table says, as the form's reading does
				el = slack.NewOptionsMultiSelectBlockElement(slack.MultiOptTypeStatic, plain("Choose"), AnswerPickID, opts...)
			} else {
				el = slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plain("Choose"), AnswerPickID, opts...)
			}
			in := slack.NewInputBlock(pickBlockID(i), plain("Your choice"), nil, el)
			in.Optional = true
			bs = append(bs, in)
			if asks := noteOptions(q); asks != "" { // the "Why?" of options that ask for one
				why := slack.NewPlainTextInputBlockElement(plain("Say why"), AnswerWhyID)
				why.Multiline, why.MaxLength = true, maxCustom
				in := slack.NewInputBlock(AnswerWhyBlockID(i), plain(clip("Why? (if you choose "+asks+")", 2000)), nil, why)
				in.Optional = true
				bs = append(bs, in)
			}
		}
		if q.OtherAllowed() || q.Default != "" {
			label := "Your answer"
			if len(q.Options) > 0 {
				label = "Or another answer"
			}
			el := slack.NewPlainTextInputBlockElement(plain("Type your answer"), AnswerOtherID)
			el.Multiline, el.MaxLength = true, maxCustom
			el.InitialValue = q.Default // a proposed answer, to send as is or edit
			in := slack.NewInputBlock(otherBlockID(i), plain(label), nil, el)
			in.Optional = true
			bs = append(bs, in)
		}
	}
	m.Blocks.BlockSet = bs
	m.Submit = plain("Submit")
	return m
}

func pickBlockID(i int) string { return "q" + strconv.Itoa(i) + ".pick" }

// AnswerWhyBlockID is the block id of AnswerModal's "Why?" input of question i.
func AnswerWhyBlockID(i int) string { return "q" + strconv.Itoa(i) + ".why" }

// noteOptions names the options of q that ask for a note ("A or B"), "" when none does.
func noteOptions(q interaction.Question) string {
	var out []string
	for _, o := range q.Options {
		if o.Note != "" {
			out = append(out, oneLine(o.Label))
		}
	}
	return strings.Join(out, " or ")
}
func otherBlockID(i int) string { return "q" + strconv.Itoa(i) + ".other" }

// AnswerFromState reads AnswerModal's submission for the questions qs:
// per question the picked labels or the typed text (trimmed). Field
// problems (both picked and typed, text too long) come back as errs keyed
// by the input's block id, for the modal to show.
func AnswerFromState(qs []interaction.Question, state *slack.ViewState) (ps []interaction.Progress, errs map[string]string) {
	ps = make([]interaction.Progress, len(qs))
	errs = map[string]string{}
	if state == nil {
		return ps, errs
	}
	for i, q := range qs {
		pick := state.Values[pickBlockID(i)][AnswerPickID]
		var idx []int
		if pick.SelectedOption.Value != "" {
			idx = append(idx, index(pick.SelectedOption.Value))
		}
		for _, o := range pick.SelectedOptions {
			idx = append(idx, index(o.Value))
		}
		// values a client cannot send count as not picked
		labels, _ := interaction.PickLenient(interaction.Request{Questions: qs}, i, idx)
		text := strings.TrimSpace(state.Values[otherBlockID(i)][AnswerOtherID].Value)
		switch {
		case text != "" && len(labels) > 0:
			errs[otherBlockID(i)] = "Choose an option or type another answer, not both."
		case text != "" && !q.OtherAllowed():
			errs[pickBlockID(i)] = "Choose one of the options."
		case textLen(text) > maxCustom:
			errs[otherBlockID(i)] = fmt.Sprintf("At most %d characters.", maxCustom)
		case text != "":
			ps[i] = interaction.Progress{Custom: text}
		case len(labels) > 0:
			ps[i] = interaction.Progress{Selected: labels}
			if _, ok := interaction.NoteNeeded(q, labels); ok {
				ps[i].Note = strings.TrimSpace(state.Values[AnswerWhyBlockID(i)][AnswerWhyID].Value)
			}
		}
	}
	return ps, errs
}

// AnswerBlockID is the block id of question i's first input in
// AnswerModal, where an error about the question is shown.
func AnswerBlockID(q interaction.Question, i int) string {
	if len(q.Options) > 0 {
		return pickBlockID(i)
	}
	return otherBlockID(i)
}
