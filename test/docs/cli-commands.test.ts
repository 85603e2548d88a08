// Every command of the docs that invokes the CLI runs as written: the `cstor-pool …`, `npx cstor-pool …` and
// `kubectl cstor-pool …` lines of the code blocks in README.md, docs/*.md and metacontroller/samples/README.md,
// from the clone's root, with the packed and installed package (test/support/installed.ts). A line exits 0
// unless its comment says `exit N`; a `$ ` command followed by output lines must print exactly that.
// `text` blocks are synopses, not commands. The node daemon's local mode acts on this machine's pools: its
// lines are checked by test/node-daemon/local.test.ts against real ones, not here.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { installedPackage, REPO, runProgram, type Installed } from "../support/installed.js";

interface DocCommand {
  file: string;
  line: number;
  text: string;
  argv: string[];
  exitCode: number;
  /** What a `$ ` command of a console block prints, when the block shows it. */
  output?: string;
}

const CLI = /^(?:npx cstor-pool|cstor-pool|kubectl cstor-pool)(?:\s|$)/;

/** Words as a POSIX shell splits them, for the simple lines docs hold; anything needing a shell is refused. */
function words(line: string, where: string): string[] {
  if (/[|;&<>`$()]/.test(line.replace(/'[^']*'|"[^"]*"/g, ""))) throw new Error(`${where}: "${line}" needs a shell; keep CLI commands in docs simple`);
  return [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]);
}

function docCommands(file: string, markdown: string): DocCommand[] {
  const out: DocCommand[] = [];
  const lines = markdown.split("\n");
  let block: { lang: string; start: number; lines: string[] } | undefined;
  lines.forEach((text, i) => {
    const fence = /^```(\w*)/.exec(text);
    if (fence && !block) return void (block = { lang: fence[1], start: i + 1, lines: [] });
    if (!block) return;
    if (!fence) return void block.lines.push(text);
    const { lang, start, lines: body } = block;
    block = undefined;
    if (lang === "text" || lang === "yaml" || lang === "json") return;
    const prompted = body.some((l) => l.startsWith("$ "));
    body.forEach((raw, k) => {
      const commandText = prompted ? (raw.startsWith("$ ") ? raw.slice(2) : undefined) : raw.trim();
      if (commandText === undefined || !CLI.test(commandText) || / node-daemon(\s|$)/.test(commandText)) return;
      const comment = /\s#\s?(.*)$/.exec(commandText);
      const command = comment ? commandText.slice(0, comment.index).trim() : commandText.trim();
      const where = `${file}:${start + k + 1}`;
      let output: string | undefined;
      if (prompted) {
        const shown = [];
        for (const next of body.slice(k + 1)) {
          if (next.startsWith("$ ")) break;
          shown.push(next);
        }
        if (shown.length > 0) output = `${shown.join("\n")}\n`;
      }
      const exit = comment ? /\bexit (\d+)/.exec(comment[1]) : null;
      out.push({ file, line: start + k + 1, text: command, argv: words(command, where), exitCode: exit ? Number(exit[1]) : 0, ...(output ? { output } : {}) });
    });
  });
  return out;
}

const SOURCES = ["README.md", "metacontroller/samples/README.md", ...readdirSync(join(REPO, "docs")).filter((f) => f.endsWith(".md")).sort().map((f) => `docs/${f}`)];

describe("docs: every CLI command in the docs runs as written", function () {
  this.timeout(5 * 60_000);
  let installed: Installed;
  before(async () => {
    installed = await installedPackage();
  });

  const commands = SOURCES.flatMap((file) => docCommands(file, readFileSync(join(REPO, file), "utf8")));

  it("finds the commands of the install guide, the operations guide and the CLI reference", () => {
    const files = new Set(commands.map((c) => c.file));
    expect([...files].sort()).to.include.members(["docs/cli.md", "docs/install.md", "docs/operations.md"]);
  });

  for (const command of commands) {
    it(`${command.file}:${command.line}: ${command.text}`, async () => {
      const env = { ...process.env, PATH: `${installed.bin}:${process.env.PATH}`, npm_config_cache: join(installed.root, "npm-cache"), npm_config_update_notifier: "false" };
      const [program, ...args] = command.argv;
      const run = await runProgram(program === "cstor-pool" ? join(installed.bin, "cstor-pool") : program, args, { cwd: REPO, env });
      expect(run.code, `${run.stderr}${run.stdout}`).to.equal(command.exitCode);
      if (command.output !== undefined) expect(run.stdout).to.equal(command.output);
    });
  }
});

describe("docs: reading commands out of Markdown", () => {
  it("takes CLI lines of shell blocks and $ lines of console blocks, their exit codes and outputs; skips synopses", () => {
    const markdown = [
      "```sh",
      "kubectl get bd -n openebs -o yaml",
      "npx cstor-pool render -f 'a b.yaml'   # exit 1 names the pool",
      "```",
      "```text",
      "cstor-pool validate -f <file>",
      "```",
      "```console",
      "$ cstor-pool validate -f x.yaml",
      "CStorPoolCluster openebs/x: accepted",
      "$ kubectl cstor-pool --version",
      "```",
    ].join("\n");
    expect(docCommands("x.md", markdown)).to.deep.equal([
      { file: "x.md", line: 3, text: "npx cstor-pool render -f 'a b.yaml'", argv: ["npx", "cstor-pool", "render", "-f", "a b.yaml"], exitCode: 1 },
      { file: "x.md", line: 9, text: "cstor-pool validate -f x.yaml", argv: ["cstor-pool", "validate", "-f", "x.yaml"], exitCode: 0, output: "CStorPoolCluster openebs/x: accepted\n" },
      { file: "x.md", line: 11, text: "kubectl cstor-pool --version", argv: ["kubectl", "cstor-pool", "--version"], exitCode: 0 },
    ]);
  });

  it("refuses a CLI line that needs a shell", () => {
    expect(() => docCommands("x.md", "```sh\ncstor-pool render -f x.yaml > out.yaml\n```")).to.throw(/x.md:2: .* needs a shell/);
  });
});
