-- 0007: the workspaces an org-wide (Enterprise Grid) installation serves,
-- as Slack's auth.teams.list names them, so that a team named by its own
-- id (T…) finds its organization's installation.
--
-- team is one workspace; enterprise the org whose org-wide install (the
-- installs row with id = enterprise) serves it. A team's own install
-- (installs.id = team) is found first whatever this table says.
CREATE TABLE install_teams (
	team       TEXT NOT NULL PRIMARY KEY,
	enterprise TEXT NOT NULL
) STRICT;
CREATE INDEX install_teams_enterprise ON install_teams (enterprise);
