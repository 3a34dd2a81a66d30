package slackoauth

import (
	"html/template"
	"net/http"

	"github.com/slackask/slackask/installs"
)

type page struct {
	Title string
	Lines []string
	Code  string // the error code, "" on success
	Done  *done
}

type done struct {
	Name, ID  string
	OrgWide   bool
	Workspace string // the --workspace of the keys command
	// AddToWorkspaces is Slack's page where an org admin adds an
	// org-wide app to the organization's workspaces ("" if unknown).
	AddToWorkspaces string
}

func donePage(in installs.Installation, name string) page {
	// An ask (and a key's scope) names the installation: the team, or
	// the organization for an org-wide install.
	d := &done{Name: name, ID: in.Key(), OrgWide: in.OrgWide, Workspace: in.Key()}
	if d.Name == "" {
		d.Name = d.ID
	}
	// An org-wide install adds the app to no workspace yet (Slack's
	// Enterprise docs): the admin adds it to workspaces on this page.
	if in.OrgWide && isID(in.Enterprise, 'E') && isID(in.AppID, 'A') {
		d.AddToWorkspaces = "https://app.slack.com/manage/" + in.Enterprise + "/integrations/profile/" + in.AppID + "/workspaces/add"
	}
	return page{Title: "slackask is installed", Done: d}
}

// pageHTML is the page's template.
const pageHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:42rem;margin:3rem auto;padding:0 1rem;color:#1d1c1d}
code,pre{background:#f4f4f4;border-radius:4px;padding:.1rem .3rem}pre{padding:.6rem;overflow-x:auto}.code{color:#666;font-size:.9rem}</style>
</head><body>
<h1>{{.Title}}</h1>
{{range .Lines}}<p>{{.}}</p>
{{end}}{{with .Code}}<p class="code">Error code: <code>{{.}}</code></p>
{{end}}{{with .Done}}{{if .OrgWide}}<p>slackask is installed for the whole <strong>{{.Name}}</strong> organization (<code>{{.ID}}</code>): it serves the workspaces of the organization an org admin adds it to (a workspace with an install of its own keeps that one).</p>
{{else}}<p>slackask is installed in <strong>{{.Name}}</strong> (<code>{{.ID}}</code>).</p>
{{end}}<h2>What to do next</h2>
<ol>
{{if .OrgWide}}<li><p><strong>Add it to workspaces</strong>: an org-wide install is in none of the organization's workspaces yet; an org admin adds it to them{{with .AddToWorkspaces}} <a href="{{.}}">on Slack's page</a>{{end}}.</p></li>
{{end}}<li><p><strong>Invite the bot</strong> to each channel it should ask in: in the channel, type <code>/invite @slackask</code>. Direct messages need no invitation.</p></li>
<li><p><strong>Create an API key</strong> for the programs that will ask here, scoped to this workspace, on the machine that runs slackask:</p>
<pre>slackask keys create --name NAME --workspace {{.Workspace}}</pre>
<p>The key is printed once; give it to the program as its bearer token. Add <code>--channels</code> or <code>--responders</code> to narrow it further.{{if .OrgWide}} A key for one workspace of the organization takes that workspace's id instead (<code>--workspace T…</code>).{{end}}</p></li>
<li><p><strong>Ask</strong>: <code>POST /v1/asks</code> with that key, naming a channel the bot is in{{if .OrgWide}} (its asks name <code>"workspace": "{{.Workspace}}"</code>, the organization, or one of its workspaces by its <code>T…</code>){{end}} (see the README, "Ask a question").</p></li>
</ol>
{{end}}</body></html>
`

var pageTmpl = template.Must(template.New("page").Parse(pageHTML))

func writePage(w http.ResponseWriter, status int, p page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.WriteHeader(status)
	_ = pageTmpl.Execute(w, p)
}
