// What the runner scripts of the berth tests share: events as JSON lines on stdout, and
// commands, one per line on stdin.
import { createInterface } from "node:readline";

// emit writes one event: a JSON object with "ev" naming it.
export const emit = (ev, fields = {}) => process.stdout.write(JSON.stringify({ ev, ...fields }) + "\n");

// serveCommands runs commands[line] for each line on stdin, emitting done {command} after it
// (error {message} when it throws or is unknown); the process exits when stdin ends. An
// unhandled rejection is emitted as an error too.
export function serveCommands(commands) {
	createInterface({ input: process.stdin })
		.on("line", async (line) => {
			const command = line.trim();
			if (!command) return;
			const run = commands[command];
			if (!run) {
				emit("error", { message: `unknown command ${JSON.stringify(command)}` });
				return;
			}
			try {
				await run();
				emit("done", { command });
			} catch (err) {
				emit("error", { message: `${command}: ${err?.stack ?? err}` });
			}
		})
		.on("close", () => process.exit(0));
	process.on("unhandledRejection", (err) => emit("error", { message: `unhandled rejection: ${err?.stack ?? err}` }));
}
