// Server-Sent Events over fetch (EventSource cannot POST or send a token), and the partial
// answer: `partial` events carry what each event changed ({op: "set", path, value} or
// {op: "append", path, text}); applied in order from nothing they give the answer so far.

/** Each event of an SSE response body: {event, data}. */
export async function* sseEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = parseBlock(block);
      if (event) yield event;
    }
  }
  const last = parseBlock(buffer);
  if (last) yield last;
}

function parseBlock(block) {
  let event = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue; // a comment: the keep-alive
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  return data.length ? { event, data: data.join("\n") } : null;
}

/** The answer after `changes` (returns the new root; containers are changed in place). */
export function applyChanges(root, changes) {
  for (const change of changes) {
    const keys = change.path;
    if (keys.length === 0) {
      root = change.op === "set" ? structuredClone(change.value) : (root ?? "") + change.text;
      continue;
    }
    let parent = root;
    for (const key of keys.slice(0, -1)) parent = parent[key];
    const last = keys[keys.length - 1];
    parent[last] = change.op === "set" ? structuredClone(change.value) : (parent[last] ?? "") + change.text;
  }
  return root;
}
