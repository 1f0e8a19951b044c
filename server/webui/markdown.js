// A small Markdown subset to HTML, safe for model output: the text is
// HTML-escaped first, and only the fixed tags below are added afterwards
// (fenced and inline code, headings, lists, quotes, bold, italic, paragraphs;
// no links, images or raw HTML). No DOM use, so node can test it too.

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

// Inline spans over already escaped text: `code`, **bold**, *italic*, _italic_.
function inline(escaped) {
  const parts = escaped.split(/(`[^`\n]+`)/);
  return parts
    .map((part, i) => {
      if (i % 2 === 1) return "<code>" + part.slice(1, -1) + "</code>";
      return part
        .replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>")
        .replace(/(^|[^*\w])\*([^*\n]+)\*(?![*\w])/g, "$1<em>$2</em>")
        .replace(/(^|[^_\w])_([^_\n]+)_(?![_\w])/g, "$1<em>$2</em>");
    })
    .join("");
}

// Markdown text (as a model streams it: possibly cut mid-block) to HTML.
export function renderMarkdown(text) {
  const lines = escapeHtml(text).split("\n");
  const out = [];
  let paragraph = [];
  let list = null;  // "ul" or "ol" while inside a list
  const flushParagraph = () => {
    if (paragraph.length) out.push("<p>" + paragraph.map(inline).join("<br>") + "</p>");
    paragraph = [];
  };
  const closeList = () => {
    if (list) out.push("</" + list + ">");
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = /^\s*```\s*([\w+.#-]*)\s*$/.exec(line);
    if (fence) {
      flushParagraph();
      closeList();
      const code = [];
      i++;
      while (i < lines.length && !/^\s*```\s*$/.test(lines[i])) code.push(lines[i++]);
      const lang = fence[1].toLowerCase().replace(/[^a-z0-9+#-]/g, "");
      out.push("<pre><code" + (lang ? ' data-lang="' + lang + '"' : "") + ">" + code.join("\n") + "</code></pre>");
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    const bullet = /^\s*[-*+]\s+(.*)$/.exec(line);
    const numbered = /^\s*\d{1,9}[.)]\s+(.*)$/.exec(line);
    const quote = /^&gt;\s?(.*)$/.exec(line);
    if (heading) {
      flushParagraph();
      closeList();
      const level = Math.min(heading[1].length + 2, 6);  // h3..h6 inside a message
      out.push("<h" + level + ">" + inline(heading[2]) + "</h" + level + ">");
    } else if (bullet || numbered) {
      flushParagraph();
      const kind = bullet ? "ul" : "ol";
      if (list !== kind) {
        closeList();
        out.push("<" + kind + ">");
        list = kind;
      }
      out.push("<li>" + inline((bullet || numbered)[1]) + "</li>");
    } else if (quote) {
      flushParagraph();
      closeList();
      out.push("<blockquote>" + inline(quote[1]) + "</blockquote>");
    } else if (line.trim() === "") {
      flushParagraph();
      closeList();
    } else {
      closeList();
      paragraph.push(line);
    }
  }
  flushParagraph();
  closeList();
  return out.join("");
}
