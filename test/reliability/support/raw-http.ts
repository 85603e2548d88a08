// HTTP over a raw socket, for tests that must control exactly when each byte is sent: half a request before
// a signal and the rest after it, headers that never end, a connection reused after idling.
import { connect, type Socket } from "node:net";

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export class RawConnection {
  private buffer = "";
  private closedFlag = false;
  private waiters: (() => void)[] = [];

  private constructor(readonly socket: Socket) {
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      this.buffer += chunk;
      this.wake();
    });
    socket.on("close", () => {
      this.closedFlag = true;
      this.wake();
    });
    socket.on("error", () => undefined);
  }

  static open(port: number): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => resolve(new RawConnection(socket)));
      socket.once("error", reject);
    });
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /** Resolves once the bytes are handed to the kernel (on loopback: in the server's receive queue). */
  send(text: string): Promise<void> {
    return new Promise((resolve, reject) =>
      this.socket.write(text, (err) => (err ? reject(err) : resolve())),
    );
  }

  /** The next complete response (Content-Length framed, as express answers). */
  async response(): Promise<RawResponse> {
    for (;;) {
      const parsed = this.parse();
      if (parsed) return parsed;
      if (this.closedFlag)
        throw new Error(
          `connection closed before a complete response: ${JSON.stringify(this.buffer.slice(0, 200))}`,
        );
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /** Resolves when the server closes the connection. */
  async closedByServer(): Promise<void> {
    while (!this.closedFlag) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  close(): void {
    this.socket.destroy();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  private parse(): RawResponse | undefined {
    const end = this.buffer.indexOf("\r\n\r\n");
    if (end < 0) return undefined;
    const [statusLine, ...lines] = this.buffer.slice(0, end).split("\r\n");
    const headers = Object.fromEntries(
      lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
    );
    const length = Number(headers["content-length"] ?? 0);
    // Content-Length counts bytes; the buffer holds characters. Responses here are ASCII JSON.
    if (this.buffer.length < end + 4 + length) return undefined;
    const body = this.buffer.slice(end + 4, end + 4 + length);
    this.buffer = this.buffer.slice(end + 4 + length);
    return { status: Number(statusLine.split(" ")[1]), headers, body };
  }
}

/** A request's text, split so that the server sees the start but cannot finish it. */
export function postText(path: string, body: string): { head: string; rest: string } {
  const bytes = Buffer.byteLength(body);
  const head = `POST ${path} HTTP/1.1\r\nHost: hooks\r\nContent-Type: application/json\r\nContent-Length: ${bytes}\r\n\r\n`;
  const half = Math.floor(body.length / 2);
  return { head: head + body.slice(0, half), rest: body.slice(half) };
}
