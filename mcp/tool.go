package mcp

import (
	"encoding/json"
	"fmt"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/slackid"
)

// ToolName is the name of the tool that asks; GetAnswerToolName the one
// that fetches the answer of an ask a call stopped waiting for.
const (
	ToolName          = "ask_user_question"
	GetAnswerToolName = "get_answer"
)

const serverInstructions = `slackask puts questions to a person in Slack and returns their answer; ` +
	`it can also collect several people's answers (team decisions, approvals by N people). ` +
	`Call ask_user_question when you need a human decision, a preference, an approval or information ` +
	`that you cannot find out yourself. The call blocks until the person answers, cancels, or the ask times out. ` +
	`People can take longer than your tool calls may last: then the result says the question is still open and ` +
	`gives its ask id; call get_answer with that id to fetch the answer later.`

var toolDescription = fmt.Sprintf(`Ask a person one or more questions in Slack and wait for the answer.

Use it when you need a decision, a preference, an approval or information only a human has; do not use it for things you can find out yourself. The call blocks until the person answers, cancels, or the deadline passes, which can take minutes or hours.

How to ask well:
- Put related questions in one call (1 to %d questions) instead of calling repeatedly.
- Give each question a stable, short, machine-friendly "id" (e.g. "db_engine"); the answer is keyed by it.
- "question" is the full question as a sentence. "header" is an optional short title of a few words; "detail" is optional longer context, e.g. the plan or the trade-offs. "question", "detail" and option descriptions are Markdown (bold, italic, ~~strike~~, code, code blocks, links, lists, quotes); header and labels are plain text; nothing you write mentions or pings anyone.
- Offer "options" when the choices are known: short, distinct labels of a few words, each with an optional "description". The label you write is exactly the value you get back. Set "multiSelect": true when several may apply.
- Do not add an "Other", "None" or "Skip" option: the person gets an "Other…" field for free text and a Skip button. Leave "options" out to ask for free text only. Set "required": true on a question that must not be skipped (an approval), and "allowOther": false on one whose answer must be one of your options.
- On a phone one tap should answer: a question alone in its call with one choice among at most 5 short labels (30 characters) is drawn as buttons ("display" overrides it). Give an option "confirm": true when an accidental tap would be costly (deploy, delete, pay). Give an option "note": "required" when you need the person's reason to act on that choice, typically on "Reject" (the answer item then carries "note"), "optional" when a reason helps but must not slow them down. For a free-text question where you already have a draft (a commit message, a reply, a summary), put it in "default": the person sends it with one tap or edits it; "custom" holds the text as sent. "style": "primary" marks the recommended option, "danger" a destructive one.
- "channel" (a Slack channel id) or "user" (a user id, for a direct message) choose where to ask; leave both out to use the default. "timeout" is a Go duration such as "30m" or "2h": how long the question stays open.

Asking several people (team decisions, approvals that need N approvers):
- "responders" lists the Slack user ids (U…) and user-group ids (S…) allowed to answer. "responses" is how many of them must answer before the call returns: a number (default 1: the first person's answer) or "all" (every responder; needs "responders"). Each person answers for themselves.
- Mark an option "veto": true when picking it must end the question at once, whatever the others say: the answer is then that person's response.
- "onTimeout": "expire" (default: no answer, ASK_TIMEOUT) or "answer" (when the deadline passes, answer with the responses that came in, if any).
- Example, approval by 2 of these 3 people where any No vetoes: {"questions":[{"id":"deploy","question":"Deploy v2.3 to production?","options":[{"label":"Yes"},{"label":"No","veto":true}],"required":true,"allowOther":false}],"responders":["U01","U02","U03"],"responses":2,"timeout":"2h"}
- The answer of a team ask is the team's: per question the label(s) most people chose (every tied label on a tie), typed text as one "custom" with a line per person ("name: text") when nobody picked an option of that question (each person's own answer is in the result's text), or after a veto the vetoing person's response. The text of the result then also says who answered what.

Reaching the people who owe an answer (they may be away, or miss one message):
- "notify": "mention" (default) mentions the responders in the channel message; "dm" also sends each named responder (users, and the members of named user groups, at most 50) the question in a direct message with its own buttons. An answer in any copy counts.
- "remindAfter" (a Go duration) posts a reminder in the thread if nobody answered by then; add "remindEvery" (at least "1m") to repeat it, at most 10 reminders, each mentioning only those who still owe an answer.
- "escalation": steps that bring in more people while the question stays unanswered, each {"after": "<duration from asking>", "responders": ["U…","S…"], "channel"?: "C…", "notify"?: "dm"|"mention"}. At each step those people are added to who may answer (nobody is removed), mentioned in a reply under the question, sent a DM with "notify": "dm", and with "channel" the question is also posted there. Steps come in increasing order of "after", all before "timeout". Not with "responses": "all".
- Example, ask the on-call engineer, then their lead after 30 minutes by DM: {"questions":[{"id":"rollback","question":"Roll back the deploy?","options":[{"label":"Roll back"},{"label":"Keep it"}]}],"responders":["U01"],"timeout":"2h","remindAfter":"10m","remindEvery":"10m","escalation":[{"after":"30m","responders":["U02"],"notify":"dm"}]}

People may answer after your tool call has to end. Pass "waitSeconds" below your tool-call time limit (e.g. 240 when calls are cut after 5 minutes): when it passes, or when your client cuts the call for taking too long, the question stays open and the result says "Still waiting", with the ask id. Then call get_answer with {"id": "<ask id>"} (again with "waitSeconds" if you like) until it returns the answer. If a call was cut before you saw the ask id, call get_answer without an id: it finds the newest question this session left open.

The result is JSON with one item per question, in request order:
{"answers":[{"id":"db_engine","selected":["Postgres"]},{"id":"notes","selected":[],"custom":"their own words"}]}
"selected" holds the chosen labels; "note" the person's reason when the chosen option asked for one; "custom" holds text the person typed instead (then "selected" is empty); both empty means the person skipped that question.

While the question is still open the result is not an error: {"status":"pending","askId":"…","message":"Still waiting: …"}.

If there is no answer the tool returns an error whose text starts with a code: ASK_CANCELLED (the person declined to answer; do not ask the same again), ASK_TIMEOUT (nobody answered in time), ASK_ABORTED (the ask was withdrawn), INVALID_QUESTION or EMPTY_QUESTIONS (fix the input and call again), SLACK_ERROR (Slack refused; the message says why).`,
	slackid.MaxQuestions)

// inputSchema is the JSON Schema of the tool's arguments: inputSchemaBase
// with the fields of the question kinds (interaction.KindFields).
var inputSchema = withKindFields(inputSchemaBase)

// withKindFields adds interaction.KindFields to the question and option
// properties of schema.
func withKindFields(schema string) string {
	var doc map[string]any
	if err := json.Unmarshal([]byte(schema), &doc); err != nil {
		panic("mcp: input schema: " + err.Error()) // a constant: caught by every test
	}
	item := doc["properties"].(map[string]any)["questions"].(map[string]any)["items"].(map[string]any)
	qProps := item["properties"].(map[string]any)
	oProps := qProps["options"].(map[string]any)["items"].(map[string]any)["properties"].(map[string]any)
	for where, props := range map[string]map[string]any{"question": qProps, "option": oProps} {
		for name, fragment := range interaction.KindFields[where] {
			var v any
			if err := json.Unmarshal([]byte(fragment), &v); err != nil {
				panic("mcp: kind field " + name + ": " + err.Error())
			}
			props[name] = v
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		panic("mcp: input schema: " + err.Error())
	}
	return string(out)
}

// inputSchemaBase is the JSON Schema of the tool's arguments but the
// kinds' fields. It does not forbid
// other properties: clients and models that send more are not refused.
// The handler decodes and validates the arguments itself, so that every
// problem comes back as a tool error with the seam's code.
const inputSchemaBase = `{
  "type": "object",
  "properties": {
    "questions": {
      "type": "array",
      "description": "The questions to ask, shown together in one Slack message.",
      "minItems": 1,
      "maxItems": 10,
      "items": {
        "type": "object",
        "properties": {
          "id": {"type": "string", "description": "Stable, unique id of the question, e.g. \"db_engine\". The answer item carries it."},
          "question": {"type": "string", "description": "The question, as a full sentence."},
          "header": {"type": "string", "description": "Optional short title of a few words."},
          "detail": {"type": "string", "description": "Optional longer context: the plan, the trade-offs, what the answer is for."},
          "options": {
            "type": "array",
            "description": "Choices to pick from. Leave out for a free-text question. Never add an \"Other\" option: the person can always type their own answer.",
            "maxItems": 100,
            "items": {
              "type": "object",
              "properties": {
                "label": {"type": "string", "description": "Short, distinct label; it is also the value returned in \"selected\"."},
                "description": {"type": "string", "description": "Optional explanation of the choice."},
                "veto": {"type": "boolean", "description": "Picking this option ends the question at once with that person's response, however many responses were wanted (e.g. \"No\" of an approval). Default false."}
              },
              "required": ["label"]
            }
          },
          "intent": {"type": "object", "description": "Optional known purpose. {\"kind\": \"plan-review\", \"approve\": \"<label>\"}: detail holds a plan shown for approval and approve names the option that approves it.", "properties": {"kind": {"type": "string", "enum": ["plan-review"]}, "approve": {"type": "string"}}, "required": ["kind"]},
          "multi_select": {"type": "boolean", "description": "Same as multiSelect (the one alias; the HTTP API takes it too)."},
          "required": {"type": "boolean", "description": "No Skip button: the person must answer this question to submit. Use it for approvals. Default false."},
          "allowOther": {"type": "boolean", "description": "false removes the \"Other…\" free-text field, so the answer is one of the options (needs options). Default true."}
        },
        "required": ["id", "question"]
      }
    },
    "channel": {"type": "string", "description": "Slack channel id to ask in (e.g. C0123456789). Default: the server's channel."},
    "user": {"type": "string", "description": "Slack user id (e.g. U0123456789) to ask in a direct message instead of a channel."},
    "workspace": {"type": "string", "description": "Slack workspace (team id T…, or E… for an Enterprise Grid organization) to ask in. Default: the API key's workspace, else the server's."},
    "responders": {"type": "array", "items": {"type": "string"}, "description": "Slack user ids (U…) and user-group ids (S…) allowed to answer. Default: the server's."},
    "responses": {"oneOf": [{"type": "integer", "minimum": 1, "maximum": 50}, {"type": "string", "enum": ["all"]}], "description": "How many people must answer before the call returns: a number (default 1, the first answer) or \"all\" (every responder; needs responders)."},
    "onTimeout": {"type": "string", "enum": ["expire", "answer"], "description": "What the deadline does: \"expire\" (default: ASK_TIMEOUT) or \"answer\" (answer with the responses that came in, when there is at least one)."},
    "timeout": {"type": "string", "description": "How long the question stays open, as a Go duration such as \"30m\" or \"2h\". Default: the server's."},
    "notify": {"type": "string", "enum": ["mention", "dm"], "description": "\"mention\" (default): responders are mentioned in the channel message. \"dm\": each named responder also gets the question in a direct message with its own buttons; an answer in any copy counts."},
    "remindAfter": {"type": "string", "description": "Post a reminder in the thread after this long (a Go duration such as \"15m\") if the question is still open."},
    "remindEvery": {"type": "string", "description": "With remindAfter: repeat the reminder this often (at least \"1m\"), at most 10 reminders, each mentioning only those who still owe an answer."},
    "escalation": {"type": "array", "maxItems": 10, "description": "Steps that bring in more people while the question is unanswered, in increasing order of after, all before timeout. Not with responses \"all\".", "items": {"type": "object", "additionalProperties": false, "properties": {
      "after": {"type": "string", "description": "When the step fires, measured from when the question was asked, as a Go duration such as \"30m\"."},
      "responders": {"type": "array", "minItems": 1, "items": {"type": "string"}, "description": "Slack user ids (U…) and user-group ids (S…) added to who may answer; they are mentioned in a reply under the question."},
      "channel": {"type": "string", "description": "Also post the question in this channel (e.g. C0123456789) when the step fires."},
      "notify": {"type": "string", "enum": ["mention", "dm"], "description": "\"dm\": also send each of them the question in a direct message. Default \"mention\"."}
    }, "required": ["after", "responders"]}},
    "waitSeconds": {"type": "number", "minimum": 0, "description": "Return after this many seconds even without an answer; the question stays open and get_answer fetches the answer later. Use a value below your tool-call time limit; 0 returns as soon as the question is posted. Default: wait until the question ends."}
  },
  "required": ["questions"]
}`

// outputSchema is the JSON Schema of the structured content of a successful
// call: interaction.Answer, or a pending ask (status, askId, message).
const outputSchema = `{
  "type": "object",
  "properties": {
    "status": {"type": "string", "enum": ["pending"]},
    "askId": {"type": "string"},
    "message": {"type": "string"},
    "answers": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "id": {"type": "string"},
          "selected": {"type": "array", "items": {"type": "string"}},
          "custom": {"type": "string"},
          "note": {"type": "string"}
        },
        "required": ["id", "selected"]
      }
    }
  }
}`

var getAnswerDescription = `Fetch the answer to a question asked earlier with ask_user_question whose call ended before the person answered (its result said "Still waiting" and gave an ask id).

Arguments: "id", the ask id (leave it out to use the newest question this session left open), and optional "waitSeconds": how long to wait for the answer before returning (default: until the question ends; 0 checks once). Keep it below your tool-call time limit.

The result is the answer, exactly as ask_user_question returns it ({"answers":[…]}); or, while nobody has answered, {"status":"pending","askId":"…","message":"Still waiting: …"}: call get_answer again later. If the question ended without an answer the tool returns an error whose text starts with a code: ASK_CANCELLED, ASK_TIMEOUT, ASK_ABORTED, or NOT_FOUND for an unknown id. Calling get_answer never withdraws the question.`

const getAnswerInputSchema = `{
  "type": "object",
  "properties": {
    "id": {"type": "string", "description": "The ask id from ask_user_question's result. Default: the newest question this session left open."},
    "waitSeconds": {"type": "number", "minimum": 0, "description": "Return after this many seconds even without an answer (0: check once). Default: wait until the question ends."}
  }
}`

func getAnswerDefinition() *mcpsdk.Tool {
	openWorld, destructive, readOnly := true, false, true
	return &mcpsdk.Tool{
		Name:         GetAnswerToolName,
		Title:        "Get the answer to a question asked in Slack",
		Description:  getAnswerDescription,
		InputSchema:  json.RawMessage(getAnswerInputSchema),
		OutputSchema: json.RawMessage(outputSchema),
		Annotations: &mcpsdk.ToolAnnotations{
			Title:           "Get the answer to a question asked in Slack",
			ReadOnlyHint:    readOnly,
			DestructiveHint: &destructive,
			OpenWorldHint:   &openWorld,
		},
	}
}

func toolDefinition() *mcpsdk.Tool {
	openWorld, destructive := true, false
	return &mcpsdk.Tool{
		Name:         ToolName,
		Title:        "Ask a person in Slack",
		Description:  toolDescription,
		InputSchema:  json.RawMessage(inputSchema),
		OutputSchema: json.RawMessage(outputSchema),
		Annotations: &mcpsdk.ToolAnnotations{
			Title:           "Ask a person in Slack",
			DestructiveHint: &destructive,
			OpenWorldHint:   &openWorld,
		},
	}
}
