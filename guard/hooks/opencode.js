// guard-opencode-plugin: written by `guard install opencode`; `guard uninstall opencode` removes it.
// Before every bash tool call, OpenCode's `tool.execute.before` hands this plugin the command;
// it asks `guard hook opencode` and throws guard's refusal, which OpenCode reports to the model
// instead of running the command. An allowed command gets no answer from here. If guard cannot
// run (missing, crashed, timed out), the command goes through with a warning, unless
// GUARD_FAIL=closed, which refuses it. After the command, `tool.execute.after` hands guard the
// output, and guard's explanation of a failure it recognises is appended to what the model reads.
import { spawnSync } from "node:child_process";

const GUARD = process.env.GUARD_LAUNCHER || "__GUARD_LAUNCHER__";
const TIMEOUT_MS = 10000;

const calls = new Map(); // callID -> { command, cwd }, from before to after

export function ask(command, cwd, sessionID, output) {
  const payload = JSON.stringify(output === undefined ? { tool: "bash", command, cwd, sessionID }
    : { event: "after", tool: "bash", command, cwd, sessionID, output });
  const run = spawnSync(GUARD, ["hook", "opencode"], { input: payload, encoding: "utf8", timeout: TIMEOUT_MS });
  if (run.error || run.status !== 0) {
    const why = run.error ? run.error.message : (run.stderr || "").trim() || `exit ${run.status}`;
    return { failed: `guard could not check the command: ${why}` };
  }
  try {
    return JSON.parse(run.stdout || "{}");
  } catch (e) {
    return { failed: `guard gave no answer: ${e.message}` };
  }
}

export const GuardPlugin = async ({ directory } = {}) => ({
  "tool.execute.before": async (input, output) => {
    if (!input || input.tool !== "bash" || !output || !output.args) return;
    const command = output.args.command;
    if (typeof command !== "string") return;
    const cwd = output.args.workdir || directory || process.cwd();
    if (input.callID) calls.set(input.callID, { command, cwd });
    const answer = ask(command, cwd, input.sessionID);
    if (answer.failed) {
      if ((process.env.GUARD_FAIL || "").toLowerCase() === "closed") throw new Error(answer.failed);
      console.error(answer.failed);
      return;
    }
    if (answer.deny) throw new Error(answer.message);
  },
  "tool.execute.after": async (input, output) => {
    if (!input || input.tool !== "bash" || !output || typeof output.output !== "string") return;
    const call = calls.get(input.callID);
    if (!call) return;
    calls.delete(input.callID);
    const answer = ask(call.command, call.cwd, input.sessionID, output.output);
    if (answer.explanation) output.output = output.output.replace(/\n?$/, "\n") + answer.explanation;
  },
});
