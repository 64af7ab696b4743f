// A JSON reader that keeps integers exact (step 1 of docs/en/guide.md, "Numbers").
//
// JSON.parse turns 9007199254740993 into a double, which changes the hash. This reader keeps
// an integer literal beyond ±(2^53 − 1) as a BigInt; every other number is a double. Objects
// have no prototype, so a key such as "__proto__" is just a key.

const MAX_SAFE = 2n ** 53n - 1n;
const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
const WHITESPACE = /[ \t\n\r]*/y;

export function parseJson(text) {
  let at = 0;
  const fail = (what) => {
    throw new SyntaxError(`invalid JSON at character ${at}: ${what}`);
  };
  const skip = () => {
    WHITESPACE.lastIndex = at;
    WHITESPACE.exec(text);
    at = WHITESPACE.lastIndex;
  };
  const string = () => {
    let end = at + 1;
    while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
    if (end >= text.length) fail('unterminated string');
    const value = JSON.parse(text.slice(at, end + 1));
    at = end + 1;
    return value;
  };
  const value = (depth) => {
    if (depth > 64) fail('nested deeper than 64 levels');
    skip();
    const c = text[at];
    if (c === '{') {
      at += 1;
      const object = Object.create(null);
      skip();
      if (text[at] === '}') {
        at += 1;
        return object;
      }
      for (;;) {
        skip();
        if (text[at] !== '"') fail('expected a key');
        const key = string();
        if (Object.hasOwn(object, key)) fail(`duplicate key ${JSON.stringify(key)}`);
        skip();
        if (text[at] !== ':') fail('expected ":"');
        at += 1;
        object[key] = value(depth + 1);
        skip();
        if (text[at] === ',') at += 1;
        else if (text[at] === '}') {
          at += 1;
          return object;
        } else fail('expected "," or "}"');
      }
    }
    if (c === '[') {
      at += 1;
      const array = [];
      skip();
      if (text[at] === ']') {
        at += 1;
        return array;
      }
      for (;;) {
        array.push(value(depth + 1));
        skip();
        if (text[at] === ',') at += 1;
        else if (text[at] === ']') {
          at += 1;
          return array;
        } else fail('expected "," or "]"');
      }
    }
    if (c === '"') return string();
    for (const [word, result] of [['true', true], ['false', false], ['null', null]]) {
      if (text.startsWith(word, at)) {
        at += word.length;
        return result;
      }
    }
    NUMBER.lastIndex = at;
    const match = NUMBER.exec(text);
    if (!match) fail('expected a value');
    at = NUMBER.lastIndex;
    if (match[1] === undefined && match[2] === undefined) {
      const n = BigInt(match[0]);
      return n > MAX_SAFE || n < -MAX_SAFE ? n : Number(n);
    }
    return Number(match[0]); // a double; one too large for it is ±Infinity, as in Python
  };
  const result = value(0);
  skip();
  if (at !== text.length) fail('text after the value');
  return result;
}
