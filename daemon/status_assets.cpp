// The status page's CSS and JS: see status_assets.h.
#include "daemon/status_assets.h"

namespace iodrift::daemon::status_assets {

const char* const kStyle = R"(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1280px;padding:12px 20px;color:#1d1d1f;background:#fafafa}
h1{font-size:22px;margin:4px 0}h2{font-size:18px;margin:0 0 4px}h3{font-size:13px;margin:6px 0 0;font-weight:600;color:#444}
header p,footer{color:#555}a{color:#0b5cad}
table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left;white-space:nowrap}
th{background:#eee}td.num{text-align:right;font-variant-numeric:tabular-nums}
section.probe{background:#fff;border:1px solid #ddd;border-radius:6px;padding:10px 14px;margin:14px 0}
.meta{color:#555;margin:0 0 6px}.err{color:#b00020}.ok{color:#1a7f37}.empty{color:#777;font-style:italic}
.banner{border:1px solid #b00020;background:#fdecee;padding:6px 10px;margin:6px 0;font-weight:600}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(460px,1fr));gap:6px 16px}
figure{margin:0}.wide{overflow-x:auto}.boots-charts{grid-template-columns:repeat(auto-fill,minmax(460px,1fr))}svg.chart{width:100%;height:auto;display:block}
svg .grid line{stroke:#e4e4e4}svg .axes line,svg .xticks line{stroke:#777}
svg text.axis{font-size:10px;fill:#555}svg text.legend-label{font-size:11px;fill:#222}
svg .reference{stroke:#999;stroke-dasharray:2 3}svg .boot line{stroke:#b00020;stroke-dasharray:4 3}
svg text.bootlabel{font-size:10px;fill:#b00020}svg polyline{stroke-width:1.6}
svg .fail{stroke:#b00020;stroke-width:1.6;fill:none}svg circle.pt{cursor:crosshair}svg circle.pt.hl{r:4.5px;stroke:#000}
.readout{min-height:1.4em;font-size:12px;color:#333;background:#f3f3f3;padding:3px 6px;border-radius:4px;margin-top:4px}
pre{background:#f6f8fa;padding:8px;overflow-x:auto;font-size:12px;margin:6px 0 0}
)";

// Hover: every value of the hovered run (same data-i) in the probe's readout line.
const char* const kScript = R"(
(function(){
  document.querySelectorAll('section.probe').forEach(function(sec){
    var out=sec.querySelector('.readout');
    if(!out)return;
    sec.addEventListener('mouseover',function(ev){
      var t=ev.target;
      if(!t||!t.classList||!t.classList.contains('pt'))return;
      var i=t.getAttribute('data-i'),parts=[];
      sec.querySelectorAll('circle.pt').forEach(function(c){
        var on=c.getAttribute('data-i')===i;
        c.classList.toggle('hl',on);
        if(on){var ti=c.querySelector('title');if(ti&&parts.indexOf(ti.textContent)<0)parts.push(ti.textContent);}
      });
      out.textContent=parts.join('  |  ');
    });
  });
  document.body.setAttribute('data-js','ready');
})();
)";

}  // namespace iodrift::daemon::status_assets
