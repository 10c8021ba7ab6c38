// Writes one TypeScript file per Grafana dashboard that assigns the dashboard's JSON to the types
// of Grafana's published schema (@grafana/schema), so that `tsc --noEmit` reports every place where
// a dashboard does not match it. Each panel is checked against its own panel plugin's `Options` and
// `FieldConfig` (stat, bargauge, table, heatmap, state-timeline, timeseries, text); the dashboard
// (annotations, variables, time, links, ...) against `Dashboard`. The schema's TypeScript enums
// are turned into unions of their values (`Loose<T>`), because JSON carries the values ("auto"),
// not the enum members. Object literals are fresh, so unknown keys are errors too.
//
// usage: node gen_schema_check.mjs OUTDIR DASHBOARD.json...
import fs from "node:fs";
import path from "node:path";

const BASE = "@grafana/schema/dist/esm/raw/composable";
// Panel type -> [module alias, module path, has a FieldConfig type]
const PANELS = {
  stat: ["stat", `${BASE}/stat/panelcfg/x/StatPanelCfg_types.gen`, false],
  bargauge: ["bargauge", `${BASE}/bargauge/panelcfg/x/BarGaugePanelCfg_types.gen`, false],
  table: ["table", `${BASE}/table/panelcfg/x/TablePanelCfg_types.gen`, true],
  heatmap: ["heatmap", `${BASE}/heatmap/panelcfg/x/HeatmapPanelCfg_types.gen`, true],
  "state-timeline": ["statetimeline", `${BASE}/statetimeline/panelcfg/x/StateTimelinePanelCfg_types.gen`, true],
  timeseries: ["timeseries", `${BASE}/timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen`, true],
  text: ["text", `${BASE}/text/panelcfg/x/TextPanelCfg_types.gen`, false],
};

const [outDir, ...files] = process.argv.slice(2);
if (!outDir || files.length === 0) {
  console.error("usage: node gen_schema_check.mjs OUTDIR DASHBOARD.json...");
  process.exit(2);
}
fs.mkdirSync(outDir, { recursive: true });

const lit = (v) => JSON.stringify(v, null, 2);
// The object as a literal (fresh: unknown keys are errors) with `panels` naming the panel constants.
const withPanels = (obj, refs) =>
  lit({ ...obj, panels: "__PANELS__" }).replace('"__PANELS__"', `[${refs.join(", ")}]`);

for (const file of files) {
  const dash = JSON.parse(fs.readFileSync(file, "utf8"));
  const stem = path.basename(file, ".json").replace(/[^A-Za-z0-9]/g, "_");
  const out = [];
  out.push(`// Generated from ${path.basename(file)} by gen_schema_check.mjs; do not edit.`);
  out.push(`import type { AnnotationQuery, Dashboard, DataQuery, Panel, RowPanel } from "@grafana/schema";`);
  for (const [alias, mod] of Object.values(PANELS)) {
    out.push(`import type * as ${alias} from "${mod}";`);
  }
  out.push(`
// Enums as unions of their values; everything else as the schema says.
type Loose<T> = T extends string ? \`\${T}\`
  : T extends readonly (infer U)[] ? Loose<U>[]
  : T extends object ? { [K in keyof T]: Loose<T[K]> }
  : T;
// The Prometheus data source's query (PromQuery of @grafana/prometheus, written out here so that
// the check needs only @grafana/schema): what panel targets and annotation targets hold.
interface PromQuery extends DataQuery {
  expr: string;
  legendFormat?: string;
  interval?: string;
  intervalFactor?: number;
  instant?: boolean;
  range?: boolean;
  exemplar?: boolean;
  format?: "time_series" | "table" | "heatmap";
  editorMode?: "builder" | "code";
}
// Prometheus annotations: the query in \`target\`; the data source reads these display options
// from the annotation itself (Grafana's own AnnotationQuery type in @grafana/data allows any key,
// @grafana/schema lists none of them).
interface PromAnnotation extends AnnotationQuery<PromQuery> {
  titleFormat?: string;
  textFormat?: string;
  tagKeys?: string;
  useValueForTime?: boolean;
}
type AnyAnnotation = AnnotationQuery | PromAnnotation;
type WithQueries<P> = Omit<P, "targets"> & { targets?: PromQuery[] };
type Typed<O, F = Record<string, unknown>> =
  Loose<WithQueries<Omit<Panel<O, F>, "options"> & { options: O }>>;
type Board = Loose<Omit<Dashboard, "annotations"> & { annotations?: { list?: AnyAnnotation[] } }>;
`);
  let n = 0;
  const panelRef = (p, where) => {
    const name = `panel_${++n}`;
    if (p.type === "row") {
      const refs = (p.panels || []).map((c) => panelRef(c, `${where} > ${c.title}`));
      out.push(`// ${where}\nconst ${name}: Loose<RowPanel> = ${withPanels(p, refs)};`);
      return name;
    }
    const known = PANELS[p.type];
    let type = "Loose<WithQueries<Panel>>";
    if (known) {
      const [alias, , hasField] = known;
      type = hasField ? `Typed<${alias}.Options, ${alias}.FieldConfig>` : `Typed<${alias}.Options>`;
    } else {
      out.push(`// panel type ${p.type} has no schema here: checked as a generic Panel`);
    }
    out.push(`// ${where} (${p.type})\nconst ${name}: ${type} = ${lit(p)};`);
    return name;
  };
  const refs = (dash.panels || []).map((p) => panelRef(p, p.title || p.type));
  out.push(`export const dashboard: Board = ${withPanels(dash, refs)};`);
  fs.writeFileSync(path.join(outDir, `${stem}.ts`), out.join("\n") + "\n");
}
