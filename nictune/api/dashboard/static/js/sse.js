// A parser of text/event-stream bodies (the WHATWG "server-sent events" format), fed in chunks.
// EventSource cannot send an Authorization header, so the dashboard reads the stream with
// fetch() and parses the frames here.

export class SseParser {
  /** @param {(event: {type: string, data: string, id: string|null}) => void} onEvent */
  constructor(onEvent) {
    this.onEvent = onEvent;
    this.buffer = "";
    this.data = [];
    this.type = "";
    this.lastId = null;
    this.retry = null;
  }

  /** Feed decoded text; complete events are dispatched as they are found. */
  push(text) {
    this.buffer += text;
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const c = this.buffer[i];
      if (c !== "\n" && c !== "\r") continue;
      if (c === "\r" && i === this.buffer.length - 1) break; // maybe the first half of \r\n
      this.line(this.buffer.slice(start, i));
      if (c === "\r" && this.buffer[i + 1] === "\n") i++;
      start = i + 1;
    }
    this.buffer = this.buffer.slice(start);
  }

  /** The stream ended: an event without its closing blank line is dropped, as the spec says. */
  end() {
    this.buffer = "";
    this.data = [];
    this.type = "";
  }

  line(line) {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return; // a comment (keep-alive)
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.type = value;
    else if (field === "data") this.data.push(value);
    else if (field === "id" && !value.includes("\0")) this.lastId = value;
    else if (field === "retry" && /^\d+$/.test(value)) this.retry = Number(value);
  }

  dispatch() {
    if (this.data.length === 0) {
      this.type = "";
      return;
    }
    const event = {type: this.type || "message", data: this.data.join("\n"), id: this.lastId};
    this.data = [];
    this.type = "";
    this.onEvent(event);
  }
}
