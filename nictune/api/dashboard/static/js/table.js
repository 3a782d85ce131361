// A table sortable by clicking any column header, paged on the client.

import {fill, h} from "./dom.js";

function isMissing(v) {
  return v === null || v === undefined || (typeof v === "number" && Number.isNaN(v));
}

/** Compare two cell values: missing values last, numbers numerically, the rest as text. */
export function compareValues(a, b) {
  const missingA = isMissing(a);
  const missingB = isMissing(b);
  if (missingA || missingB) return missingA === missingB ? 0 : missingA ? 1 : -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "boolean" && typeof b === "boolean") return Number(a) - Number(b);
  return String(a).localeCompare(String(b), "en", {numeric: true});
}

/** A header's text with a line-break opportunity after each "/" (segments/<wbr>run), so a
 *  unit does not set its column's width. */
function breakable(label) {
  return String(label).split("/").flatMap((part, i) => (i ? ["/", h("wbr"), part] : [part]));
}

/**
 * @typedef {{key: string, label: string, value: (row: any) => any, cell?: (row: any) => any,
 *            numeric?: boolean, wrap?: boolean, title?: string}} Column
 * (`wrap`: the cells may break over lines, so a long one does not widen the table)
 */
export class SortableTable {
  /**
   * @param {Column[]} columns
   * @param {{sortKey?: string, descending?: boolean, pageSize?: number, rowKey?: (row: any) => string,
   *          rowClass?: (row: any) => string, className?: string, empty?: string}} options
   */
  constructor(columns, options = {}) {
    this.columns = columns;
    this.rows = [];
    this.sortKey = options.sortKey || columns[0].key;
    this.descending = Boolean(options.descending);
    this.pageSize = options.pageSize || 50;
    this.page = 0;
    this.rowClass = options.rowClass || (() => "");
    this.empty = options.empty || "Nothing to show.";
    this.table = h("table", {class: ["sortable", options.className]});
    this.pager = h("div", {class: "pager"});
    this.element = h("div", {class: "table-wrap"}, h("div", {class: "scroll"}, this.table), this.pager);
  }

  /** Replace the columns (the sort stays when its column is still there). */
  setColumns(columns) {
    this.columns = columns;
    if (!columns.some((c) => c.key === this.sortKey)) this.sortKey = columns[0].key;
    this.render();
  }

  /** Replace the rows and redraw. */
  setRows(rows) {
    this.rows = rows;
    this.render();
  }

  /** Sort by `key` (clicking the current column flips the order). */
  sortBy(key) {
    if (key === this.sortKey) this.descending = !this.descending;
    else {
      this.sortKey = key;
      this.descending = false;
    }
    this.page = 0;
    this.render();
  }

  sorted() {
    const column = this.columns.find((c) => c.key === this.sortKey) || this.columns[0];
    const sign = this.descending ? -1 : 1;
    return this.rows
      .map((row, index) => ({row, index, value: column.value(row)}))
      .sort((a, b) => {
        // Missing values stay last whatever the direction; ties keep the rows' order.
        const aMiss = isMissing(a.value), bMiss = isMissing(b.value);
        if (aMiss || bMiss) return (aMiss === bMiss ? 0 : aMiss ? 1 : -1) || a.index - b.index;
        return sign * compareValues(a.value, b.value) || a.index - b.index;
      })
      .map((x) => x.row);
  }

  render() {
    const head = h("tr", {}, this.columns.map((c) => {
      const active = c.key === this.sortKey;
      const arrow = active ? (this.descending ? " ▼" : " ▲") : "";
      return h("th", {class: [c.numeric ? "num" : null, c.wrap ? "wrap" : null], "aria-sort": active ? (this.descending ? "descending" : "ascending") : "none",
                      title: c.title || null, "data-key": c.key},
        h("button", {type: "button", class: "sort", onclick: () => this.sortBy(c.key)}, breakable(c.label), arrow));
    }));
    const rows = this.sorted();
    const pages = Math.max(1, Math.ceil(rows.length / this.pageSize));
    this.page = Math.min(this.page, pages - 1);
    const shown = rows.slice(this.page * this.pageSize, (this.page + 1) * this.pageSize);
    const body = shown.length
      ? shown.map((row) => h("tr", {class: this.rowClass(row) || null},
          this.columns.map((c) => h("td", {class: [c.numeric ? "num" : null, c.wrap ? "wrap" : null]}, c.cell ? c.cell(row) : String(c.value(row) ?? "–")))))
      : [h("tr", {}, h("td", {colspan: this.columns.length, class: "empty"}, this.empty))];
    fill(this.table, h("thead", {}, head), h("tbody", {}, body));
    if (rows.length <= this.pageSize) {
      fill(this.pager);
      return;
    }
    const first = this.page * this.pageSize + 1;
    const last = Math.min(rows.length, first + this.pageSize - 1);
    fill(this.pager,
      h("button", {type: "button", disabled: this.page === 0, onclick: () => { this.page--; this.render(); }}, "‹ previous"),
      h("span", {}, ` rows ${first}–${last} of ${rows.length} `),
      h("button", {type: "button", disabled: this.page >= pages - 1, onclick: () => { this.page++; this.render(); }}, "next ›"));
  }
}
