package results

import (
	"fmt"
	"html/template"
	"strings"
)

// behaviour highlights one member's bars when its legend entry or a bar is hovered, opens the
// event of a clicked bar, checks that every violation link leads to an event row, and makes the
// timeline zoomable: the mouse wheel zooms around the pointer, a drag or shift+wheel pans, the
// buttons zoom, pan and reset, and "show on the timeline" zooms to a violation. Zooming moves the
// elements of <g class="zoom"> from their unzoomed x (read once) and redraws the ticks; the
// visible range, in seconds of the run, is in the timeline's data-view attribute.
const behaviour = `(function(){
var svg=document.querySelector('svg.timeline');
var dragged=false;
function highlight(m){
  if(!svg)return;
  svg.classList.toggle('focus',!!m);
  svg.querySelectorAll('rect.own').forEach(function(r){r.classList.toggle('hl',r.getAttribute('data-member')===m);});
}
document.querySelectorAll('.legend [data-member], rect.own[data-member]').forEach(function(el){
  el.addEventListener('mouseenter',function(){highlight(el.getAttribute('data-member'));});
  el.addEventListener('mouseleave',function(){highlight(null);});
});
document.querySelectorAll('rect.own[data-start-event]').forEach(function(r){
  r.addEventListener('click',function(){if(!dragged)location.hash='#e'+r.getAttribute('data-start-event');});
});
var broken=[];
document.querySelectorAll('a[href^="#e"]').forEach(function(a){
  if(!document.getElementById(a.getAttribute('href').slice(1)))broken.push(a.getAttribute('href'));
});
if(broken.length)window.gqRecordError('violation links without an event row: '+broken.join(' '));
document.documentElement.setAttribute('data-links-checked',String(document.querySelectorAll('a[href^="#e"]').length));
if(svg)zoomable(svg);
document.documentElement.setAttribute('data-ready','1');

function zoomable(svg){
  var L=+svg.getAttribute('data-left'),R=+svg.getAttribute('data-right'),A=+svg.getAttribute('data-axis');
  var H=+svg.getAttribute('height'),W=+svg.getAttribute('width');
  var segs=JSON.parse(svg.getAttribute('data-segs'));
  var zg=svg.querySelector('g.zoom'),tg=svg.querySelector('g.ticks'),tl=svg.querySelector('g.ticklabels'),NS='http://www.w3.org/2000/svg';
  var readout=document.getElementById('zoom-range');
  var items=[],all=zg.querySelectorAll('rect,line,text,path,polygon,polyline');
  for(var i=0;i<all.length;i++){
    var el=all[i],tag=el.tagName,it={el:el,t:tag};
    if(tag==='rect'){
      var dw=el.getAttribute('data-w');
      it.x=+el.getAttribute('x');it.w=dw===null?+el.getAttribute('width'):+dw;it.m=dw===null?0:+el.getAttribute('width');
    }else if(tag==='line'){it.x=+el.getAttribute('x1');it.x2=+el.getAttribute('x2');}
    else if(tag==='text'){
      it.x=+el.getAttribute('x');
      if(el.hasAttribute('data-fit')){it.fit=+el.getAttribute('data-fit');it.x1=+el.getAttribute('data-x1');}
    }else if(tag==='path'){
      var m=/translate\(([-0-9.]+) ([-0-9.]+)\)/.exec(el.getAttribute('transform')||'');
      if(!m)continue;
      it.x=+m[1];it.y=m[2];
    }else{
      it.p=el.getAttribute('points').split(' ').map(function(s){var c=s.split(',');return [+c[0],c[1]];});
    }
    items.push(it);
  }
  var v0=L,v1=R;
  function X(x){return L+(x-v0)*(R-L)/(v1-v0);}
  function tOf(x){
    for(var i=0;i<segs.length;i++){var s=segs[i];
      if(x<=s[1]||i===segs.length-1){if(s[1]<=s[0])return s[2];return s[2]+(s[3]-s[2])*Math.min(1,Math.max(0,(x-s[0])/(s[1]-s[0])));}}
    return 0;
  }
  function xOf(t){
    for(var i=0;i<segs.length;i++){var s=segs[i];
      if(t<=s[3]||i===segs.length-1){if(s[3]<=s[2])return s[0];return s[0]+(s[1]-s[0])*Math.min(1,Math.max(0,(t-s[2])/(s[3]-s[2])));}}
    return R;
  }
  function fmt(t,step){
    var d=step<0.01?3:(step<0.1?2:(step<1?1:0));
    if(t>=3600){var hr=Math.floor(t/3600),mh=Math.round((t-3600*hr)/60);return hr+'h'+(mh?mh+'m':'');}
    if(t>=60){var mi=Math.floor(t/60),se=+(t-60*mi).toFixed(d);return mi+'m'+(se?se+'s':'');}
    if(t<1)return (+(t*1000).toFixed(Math.max(0,d-3)))+'ms';
    return (+t.toFixed(d))+'s';
  }
  var steps=[.001,.002,.005,.01,.02,.05,.1,.2,.5,1,2,5,10,15,30,60,120,300,600,900,1800,3600,7200];
  function ticks(){
    while(tg.firstChild)tg.removeChild(tg.firstChild);
    while(tl.firstChild)tl.removeChild(tl.firstChild);
    for(var i=0;i<segs.length;i++){
      var s=segs[i];if(s[4])continue;
      var lo=Math.max(s[0],v0),hi=Math.min(s[1],v1);if(hi<=lo)continue;
      var t0=tOf(lo),t1=tOf(hi),step=steps[steps.length-1];
      for(var j=0;j<steps.length;j++){if((t1-t0)/steps[j]<=12){step=steps[j];break;}}
      for(var t=Math.ceil(t0/step-1e-9)*step;t<=t1+1e-9;t+=step){
        var x=X(xOf(t)).toFixed(1);
        var ln=document.createElementNS(NS,'line');
        ln.setAttribute('class','tick');ln.setAttribute('x1',x);ln.setAttribute('x2',x);ln.setAttribute('y1',A-4);ln.setAttribute('y2',H);
        var tx=document.createElementNS(NS,'text');
        tx.setAttribute('class','ticklabel');tx.setAttribute('x',x);tx.setAttribute('y',A-6);tx.setAttribute('text-anchor','middle');
        tx.textContent=fmt(t,step);
        tg.appendChild(ln);tl.appendChild(tx);
      }
    }
  }
  function apply(){
    var k=(R-L)/(v1-v0);
    for(var i=0;i<items.length;i++){
      var it=items[i],el=it.el;
      switch(it.t){
      case 'rect':el.setAttribute('x',X(it.x).toFixed(1));el.setAttribute('width',Math.max(it.m,it.w*k).toFixed(1));break;
      case 'line':el.setAttribute('x1',X(it.x).toFixed(1));el.setAttribute('x2',X(it.x2).toFixed(1));break;
      case 'text':
        var x=X(it.x);
        if(it.fit!==undefined){
          var x1=X(it.x1);x=Math.max(x,L+3);
          el.setAttribute('visibility',x1-x+3>=it.fit?'visible':'hidden');
        }
        el.setAttribute('x',x.toFixed(1));break;
      case 'path':el.setAttribute('transform','translate('+X(it.x).toFixed(1)+' '+it.y+')');break;
      default:el.setAttribute('points',it.p.map(function(p){return X(p[0]).toFixed(1)+','+p[1];}).join(' '));
      }
    }
    ticks();
    phases();
    var a=tOf(v0),b=tOf(v1);
    svg.setAttribute('data-view',a.toFixed(3)+' '+b.toFixed(3));
    if(readout)readout.textContent=k>1.0001?'showing '+fmt(a,(b-a)/10)+' to '+fmt(b,(b-a)/10)+' (zoom ×'+(+k.toFixed(1))+')':'showing the whole run';
  }
  // Phase labels: each in the first of two rows where it does not run into the one before,
  // else hidden (its line's tooltip names it).
  var plabels=zg.querySelectorAll('text.phaselabel');
  function phases(){
    var ends=[-1e9,-1e9];
    for(var i=0;i<plabels.length;i++){
      var el=plabels[i],x=+el.getAttribute('x'),w=el.textContent.length*6+6,end=el.getAttribute('text-anchor')==='end';
      var lo=end?x-w:x,row=lo>=ends[0]?0:(lo>=ends[1]?1:-1);
      el.setAttribute('visibility',row<0||lo<L-2?'hidden':'visible');
      if(row<0)continue;
      el.setAttribute('y',String(11+10*row));ends[row]=lo+w;
    }
  }
  phases();
  function view(a,b){
    var w=Math.min(R-L,Math.max((R-L)/5000,b-a));
    if(b-a<w){var c=(a+b)/2;a=c-w/2;}
    b=a+w;
    if(a<L){b+=L-a;a=L;}
    if(b>R){a-=b-R;b=R;}
    v0=Math.max(L,a);v1=b;apply();
  }
  function zoomAt(x,f){
    var xb=v0+(x-L)*(v1-v0)/(R-L),w=(v1-v0)*f,a=xb-(x-L)/(R-L)*w;
    view(a,a+w);
  }
  function pan(d){view(v0+d,v1+d);}
  function px(e){var r=svg.getBoundingClientRect();return (e.clientX-r.left)*W/r.width;}
  svg.addEventListener('wheel',function(e){
    var x=px(e);if(x<L||x>R)return;
    e.preventDefault();
    var u=e.deltaMode===1?16:(e.deltaMode===2?400:1),dx=e.deltaX*u,dy=e.deltaY*u;
    if(e.shiftKey||Math.abs(dx)>Math.abs(dy))pan((Math.abs(dx)>Math.abs(dy)?dx:dy)*(v1-v0)/(R-L));
    else zoomAt(x,Math.exp(dy*0.002));
  },{passive:false});
  var drag=null;
  svg.addEventListener('pointerdown',function(e){
    if(e.button!==0)return;var x=px(e);if(x<L||x>R)return;
    drag={x:x,a:v0,b:v1,moved:false};
  });
  window.addEventListener('pointermove',function(e){
    if(!drag)return;var dx=px(e)-drag.x;
    if(Math.abs(dx)>3)drag.moved=true;
    if(!drag.moved)return;
    svg.classList.add('dragging');
    var s=(drag.b-drag.a)/(R-L);view(drag.a-dx*s,drag.b-dx*s);
  });
  window.addEventListener('pointerup',function(){
    if(drag&&drag.moved){dragged=true;setTimeout(function(){dragged=false;},0);}
    drag=null;svg.classList.remove('dragging');
  });
  document.querySelectorAll('[data-zoom]').forEach(function(b){
    b.addEventListener('click',function(){
      var w=v1-v0;
      switch(b.getAttribute('data-zoom')){
      case 'in':zoomAt((L+R)/2,0.5);break;
      case 'out':zoomAt((L+R)/2,2);break;
      case 'earlier':pan(-w/4);break;
      case 'later':pan(w/4);break;
      default:view(L,R);
      }
    });
  });
  document.querySelectorAll('button.show[data-x0]').forEach(function(b){
    b.addEventListener('click',function(){
      var a=+b.getAttribute('data-x0'),c=+b.getAttribute('data-x1'),w=Math.max(c-a,(R-L)/40)*1.6,m=(a+c)/2;
      view(m-w/2,m+w/2);
      document.getElementById('timeline').scrollIntoView({block:'start'});
    });
  });
}
})();`

// The key under the member legend: what each mark of the timeline means.
const keyHTML = `<span class="k"><svg width="14" height="12"><path class="vmark" transform="translate(7 11)" d="` + glyphVMark + `"/></svg>an event a violation cites, on the partitions and members it concerns (the lane's name turns red; a red band spans a violation's events when they are close together)</span>
<span class="k"><svg width="26" height="12"><rect x="0" y="1" width="26" height="10" style="fill:#4e79a7"/><rect x="0" y="1" width="26" height="10" class="lostmark"/></svg>an ownership that ended without a clean revocation (lost, fenced or session expired)</span>
<span class="k"><svg width="26" height="14"><rect x="0" y="0" width="26" height="6" style="fill:#4e79a7"/><rect x="8" y="7" width="18" height="6" style="fill:#f28e2b"/></svg>two owners at once: one sub-lane each</span>
<span class="k"><svg width="12" height="12"><path class="gl" transform="translate(6 6)" d="` + glyphCross + `"/></svg>fenced, lost or session expired</span>
<span class="k"><svg width="12" height="12"><path class="gl m-left" transform="translate(6 6)" d="` + glyphLeft + `"/></svg>left</span>
<span class="k"><svg width="12" height="12"><path class="gl m-stopped" transform="translate(6 6)" d="` + glyphStop + `"/></svg>stopped for good</span>
<span class="k"><svg width="14" height="14"><path class="gl restarted" transform="translate(7 7)" d="` + glyphRedo + `"/></svg>restarted</span>
<span class="k"><svg width="10" height="14"><path class="ncmark" transform="translate(5 7)" d="` + glyphNC + `"/></svg>an answer NOT_COORDINATOR (or not available, loading)</span>
<span class="k"><svg width="26" height="12"><rect x="0" y="2" width="26" height="10" class="rate consumed"/><line x1="0" y1="3" x2="26" y2="3" class="rate produced"/></svg>records consumed per second; dashed: produced and acknowledged</span>`

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"value":      eventValue,
	"dur":        roundDur,
	"f1":         f1,
	"css":        func(s string) template.CSS { return template.CSS(s) }, // colours of the fixed palettes only
	"pageScript": func() template.JS { return template.JS(pageScript) },  // the page's own constant scripts
	// The behaviour in a CDATA section: a page an XML parser reads too (the tests' does).
	"behaviour": func() template.JS { return template.JS("//<![CDATA[\n" + behaviour + "\n//]]>") },
	"key":       func() template.HTML { return template.HTML(keyHTML) }, // a constant
	"join":      strings.Join,
	"maxMarks":  func() int { return maxMarks },
	"famcss": func() template.CSS {
		var b strings.Builder
		for _, f := range faultFamilies {
			fmt.Fprintf(&b, ".fam-%s,.band-%s{fill:%s}", f.class, f.class, f.fill)
		}
		return template.CSS(b.String()) // the fixed table's colours
	},
	"famfill": func(class string) template.CSS {
		for _, f := range faultFamilies {
			if f.class == class {
				return template.CSS(f.fill)
			}
		}
		return ""
	},
}).Parse(pageHead + `h1{font-size:1.3em;margin-bottom:.4em}h2{font-size:1.1em;margin-top:1.5em}code{background:#f3f3f3;padding:.1em .3em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.2em .5em;vertical-align:top;text-align:left}
span.holds{color:#17803d}span.violated{color:#c00000;font-weight:bold}span.skipped{color:#8a6d00}li.violation{color:#a00000}
.banner{border:2px solid;border-left-width:10px;padding:.5em 1em;margin:.6em 0 1em;max-width:1180px}
.banner.violated{border-color:#c00000;background:#fdecec}.banner.holds{border-color:#17803d;background:#eaf6ee}.banner.cut-short{border-color:#8a6d00;background:#fdf6e0}.banner.cut-short .headline{color:#6b5400}
.banner .headline{font-size:1.15em;font-weight:bold;margin:.2em 0 .4em}.banner.violated .headline{color:#a00000}.banner.holds .headline{color:#126b33}
.banner ul{margin:.2em 0;padding-left:1.2em}.banner li{margin:.35em 0}.banner .bname{font-weight:bold;color:#a00000}
.banner .where{color:#333}.banner .on{font-weight:bold}.finding{background:#222;color:#fff;padding:0 .4em;border-radius:3px;font-size:.9em}
button{font:inherit;font-size:12px;padding:.1em .6em;cursor:pointer}
.zoomctl{margin:.3em 0;font-size:13px}.zoomctl .hint{color:#555;margin-left:1em}#zoom-range{margin-left:1em;font-weight:bold}
svg.timeline{border:1px solid #ccc;background:#fff;display:block;user-select:none;-webkit-user-select:none;cursor:grab}
svg.timeline.dragging{cursor:grabbing}
.stripe{fill:#f4f5f7}.gutterline{stroke:#bbb}
.squeezed{fill:#ececec}.squeezedlabel{font-size:11px;fill:#444;font-style:italic}
.tick{stroke:#e2e2e2}.ticklabel{font-size:10px;fill:#555}
.phase{stroke:#666;stroke-width:1;stroke-dasharray:4 3}.phaselabel{font-size:10px;fill:#333}
.caption{font-size:10px;font-weight:bold;fill:#444;letter-spacing:.06em;text-transform:uppercase}
.lane,.tp{font-size:11px;fill:#222}.lane.violated,.tp.violated{fill:#c00000;font-weight:bold}.ratetick{font-size:10px;fill:#555}
.vdot{fill:#c00000}.nodata{font-size:11px;fill:#555;font-style:italic}
.faultband{fill-opacity:.22}.fault{stroke:#555;stroke-width:.5}
.stallband{fill:#8c8c8c;fill-opacity:.18}.stall{fill:#b8b8b8;stroke:#555;stroke-width:.5;stroke-dasharray:2 1}
{{famcss}}
.faultlabel,.coordlabel,.mlabel{font-size:11px;fill:#1a1a1a;pointer-events:none}.mlabel.light{fill:#fff}
.coord{stroke:#fff;stroke-width:1}.coord.stale{fill-opacity:.35}.ncmark{fill:#222}
.rate.consumed{fill:#6baed6;fill-opacity:.6;stroke:#2171b5;stroke-width:1}.rate.produced{fill:none;stroke:#333;stroke-width:1;stroke-dasharray:3 2}
.mstate.joining{fill-opacity:.35}.mstate.out{fill:#999}.mstate.stopped{fill:#555}.churn{fill:#3a3a3a;fill-opacity:.9}
.gl{fill:none;stroke:#000;stroke-width:2}.gl.m-left{fill:#000;stroke:#fff;stroke-width:1}.gl.m-stopped{fill:#000;stroke:#fff;stroke-width:1}.gl.restarted{stroke:#0b7a3b;stroke-width:2}
.own{stroke:#fff;stroke-width:.5;cursor:pointer}.own.again{stroke:#222;stroke-dasharray:3 2}.own.many{stroke:none;fill:#777}
.lostmark{fill:url(#hatch);pointer-events:none}
svg.focus rect.own{opacity:.25}svg.focus rect.own.hl{opacity:1}
.vband{fill:#c00000;fill-opacity:.10}path.vmark{fill:#c00000;stroke:#fff;stroke-width:1}
.legend,.key{margin:.3em 0;max-width:1200px}.key{font-size:12px;color:#333}.key .k{display:inline-block;margin:.1em 1.2em .1em 0}.key svg{vertical-align:middle;margin-right:.3em;overflow:visible}
.swatch{display:inline-block;width:1em;height:1em;vertical-align:middle;margin:0 .3em 0 1em;border-radius:2px}
tr:target{background:#fff3c4}tr.cited td:first-child{border-left:3px solid #c00000}
tr.fault td.fam{width:.6em}
` + pageBody + `{{if .Banner}}<div class="banner violated" id="banner">
<p class="headline">✗ {{.Failed}} of {{len .Verdicts}} checkers found a violation{{if .Truncated}} (the history ends mid-line: the run was killed, and it is judged up to there){{end}}</p>
<ul>{{range .Banner}}<li class="bitem" data-checker="{{.Checker}}" data-first-event="{{.First}}"><a class="bname" href="#v-{{.Checker}}">{{.Checker}}</a>{{if .Finding}} <span class="finding">{{.Finding}}</span>{{end}}: {{.Message}}
<span class="where">— {{if ge .First 0}}at {{.At}}, events {{range .Events}}<a href="#e{{.}}">#{{.}}</a> {{end}}{{if .MoreEvents}}and {{.MoreEvents}} more{{end}}{{end}}{{if .Partitions}} · on <span class="on">{{join .Partitions ", "}}</span>{{end}}{{if .Members}} · members <span class="on">{{join .Members ", "}}</span>{{end}}{{if gt .Count 1}} · {{.Count}} violations{{end}}</span>
{{if .Zoom}}<button class="show" data-x0="{{f1 .X0}}" data-x1="{{f1 .X1}}">show on the timeline</button>{{end}}</li>
{{end}}</ul></div>
{{else if .Stopped}}<div class="banner cut-short" id="banner"><p class="headline">⚠ Cut short: no checker found a violation up to where the run stopped, which is not a hold</p><p>The run {{.Stopped}}. The checkers that speak of the end of a run could not judge it; rerun it to judge it whole: <code>{{.Command}}</code></p></div>
{{else}}<div class="banner holds" id="banner"><p class="headline">✓ No checker found a violation{{if .Truncated}} (the history ends mid-line: the run was killed, and it is judged up to there){{end}}</p></div>
{{end}}<p class="summary">{{.Summary}}{{if .Truncated}} — <strong>the history ends mid-line: the run was killed, and it is judged up to there</strong>{{end}}</p>
{{if .Run.Scenario}}<table class="run">
<tr><th>seed</th><td>{{.Run.Seed}}</td><th>scenario</th><td>{{.Run.Scenario}}</td><th>Kafka</th><td>{{.Run.Kafka}}</td><th>protocol</th><td>{{.Run.Protocol}}</td></tr>
{{if .Run.Dir}}<tr><th>run directory</th><td colspan="7"><code>{{.Run.Dir}}</code></td></tr>{{end}}
</table>{{end}}
{{if .Command}}<p>Rerun: <code>{{.Command}}</code></p>{{end}}
<h2 id="timeline">Timeline</h2>
<div class="zoomctl"><button data-zoom="out" title="zoom out">− zoom out</button> <button data-zoom="in" title="zoom in">+ zoom in</button> <button data-zoom="earlier">← earlier</button> <button data-zoom="later">later →</button> <button data-zoom="reset">whole run</button><span id="zoom-range">showing the whole run</span><span class="hint">mouse wheel over the timeline: zoom; drag or shift+wheel: pan; hover: details; click a bar: its event</span></div>
<p class="legend">{{range .Legend}}<span class="member" data-member="{{.Member}}"><span class="swatch" style="background:{{css .Color}}"></span>{{.Member}}{{if .Kind}} <small>({{.Kind}})</small>{{end}}</span>{{end}}</p>
<p class="key">{{range .Families}}<span class="k"><span class="swatch" style="background:{{css .Fill}};margin-left:0"></span>{{.Name}}</span>{{end}}{{key}}</p>
{{.Timeline}}
{{if .Merged}}<p class="aggregated">{{.Merged}} ownerships narrower than a pixel, next to one another, are drawn as {{.MergedBars}} grey bars, each saying how many it stands for; the violation marks and the events table still show every event a violation cites, and history.jsonl has every ownership.</p>
{{end}}{{if .DroppedMarks}}<p class="aggregated">{{.DroppedMarks}} membership and coordinator marks are not drawn (a lane draws at most {{maxMarks}}); history.jsonl has them.</p>
{{end}}<p class="howto">From the top: faults, one lane per target, each also drawn as a band behind every lane; the harness's own stalls, when its process did not run (a bar each, "harness stalled Xs", and a grey band behind every lane); the node the history names as the group's coordinator (members' FindCoordinator answers, the observer's describes); records consumed per second; each member's membership (in the group in its colour, joining or rebalancing pale, out of the group a grey line); one row per partition, a bar per ownership from its assignment to where the checkers end it (revoked, lost, fenced, session expired, left), overlapping owners in sub-lanes. Vertical dashed lines start phases; the setup and teardown are drawn compressed.</p>
{{with .ShareLanes}}{{.}}
{{end}}{{if .Faults}}<h2>Faults</h2>
<table class="faults"><tr><th></th><th>fault</th><th>target</th><th>from</th><th>to</th><th>what it did</th></tr>
{{range .Faults}}<tr class="fault"><td class="fam fam-{{.Family}}" style="background:{{famfill .Family}}"></td><td>{{.What}}</td><td>{{.Target}}</td><td>{{dur .Start}} <small>(event {{.Event}})</small></td><td>{{if .Stopped}}{{dur .End}} <small>(event {{.StopEvent}})</small>{{else}}never stopped{{end}}</td><td>{{.Detail}}</td></tr>
{{end}}</table>{{end}}
<h2>Verdicts</h2>
{{range .Notes}}<p class="note">note: {{.}}</p>
{{end}}<table class="verdicts"><tr><th>checker</th><th>verdict</th><th>violations and notes</th></tr>
{{range .Verdicts}}<tr id="v-{{.Name}}" class="verdict {{.Status}}"><td>{{.Name}}</td><td><span class="{{.Status}}">{{.Status}}</span></td>
<td>{{if .Skipped}}{{.Skipped}}<br>{{end}}{{if .Violations}}<ol class="violations">{{range .Violations}}<li class="violation">{{.Message}} {{range .EventIndexes}}<a class="ev" href="#e{{.}}">#{{.}}</a> {{end}}</li>{{end}}</ol>{{end}}{{if .More}}<p>… and {{.More}} more in verdicts.json</p>{{end}}{{range .Notes}}<small>{{.}}</small><br>{{end}}</td></tr>
{{end}}</table>
{{if .Pauses}}<h2>Rebalance pauses</h2>
<table class="pauses"><tr><th>protocol</th><th>partition pauses</th><th>p50</th><th>p99</th><th>max</th><th>member pauses</th><th>max</th></tr>
{{range .Pauses}}<tr><td>{{.Protocol}}</td><td>{{.Partition.Count}}</td><td>{{dur .Partition.P50}}</td><td>{{dur .Partition.P99}}</td><td>{{dur .Partition.Max}}</td><td>{{.Member.Count}}</td><td>{{dur .Member.Max}}</td></tr>
{{end}}</table>{{end}}
<h2>Events</h2>
<p>Ownership, membership, faults, phases, failed calls and every event a violation cites{{if .Dropped}} ({{.Dropped}} more not listed: history.jsonl has them){{end}}.</p>
<table class="events"><tr><th>#</th><th>time</th><th>process</th><th>type</th><th>f</th><th>value</th><th>why</th><th>cited by</th></tr>
{{range .Events}}<tr id="e{{.Index}}"{{if .CitedBy}} class="cited"{{end}}><td>{{.Index}}</td><td>{{.Time}}</td><td>{{.Process}}</td><td>{{.Type}}</td><td>{{.F}}</td><td>{{value .Event}}</td><td>{{.Why}}</td><td>{{range .CitedBy}}<a href="#v-{{.}}">{{.}}</a> {{end}}</td></tr>
{{end}}</table>
<pre id="script-errors" hidden></pre>
<script>{{behaviour}}</script>
</body></html>
`))
