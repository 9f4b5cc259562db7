"""The HTTP headers with which a request names the agent and the workspace it acts for (a user
or admin token may act as any agent of its workspace). Clients send them; the hub reads them."""

AGENT_HEADER = "X-Switchboard-Agent"
WORKSPACE_HEADER = "X-Switchboard-Workspace"
