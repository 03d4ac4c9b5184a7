/* GET /: a page for people, embedded in the binary (nothing is read from disk): pick a loaded
 * model, give it a text (or a PNG for an image classifier), see a completion streamed, an
 * embedding, the likeliest labels, or the attention of any layer and head as a heatmap over the
 * tokens (POST /v1/attention). Its address's fragment can run it (#model=M&input=TEXT&run=complete,
 * attention&max_tokens=N&layer=L&head=H: what tests/test_serve_page.c asks headless Chromium). */
#include <stdlib.h>
#include <string.h>

#include "serve.h"

/* Pieces under C's 4095-character string literal, joined once. */
static const char *const PAGE[] = {
    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>tformer serve</title>\n<style>\n"
    "body{font:15px system-ui,sans-serif;margin:24px;max-width:1100px;color:#1b1f24}\n"
    "h1{font-size:20px;margin:0 0 12px}label{margin-right:12px}\n"
    "textarea{width:100%;height:70px;font:14px monospace;box-sizing:border-box}\n"
    "button{margin:8px 8px 8px 0;padding:6px 12px}select,input{margin-left:4px}\n"
    "#out{white-space:pre-wrap;font:14px monospace;background:#f4f5f7;padding:10px;min-height:40px;border-radius:4px}\n"
    "#err{color:#b3261e;white-space:pre-wrap}\n"
    "table.att{border-collapse:collapse;font:11px monospace;margin-top:8px}\n"
    "table.att td{width:22px;height:22px;padding:0;border:1px solid #fff}\n"
    "table.att th{font-weight:normal;padding:0 4px;max-width:80px;overflow:hidden;white-space:nowrap}\n"
    "table.att thead th{writing-mode:vertical-rl;transform:rotate(180deg);height:70px;text-align:left}\n"
    "</style></head><body>\n"
    "<h1>tformer serve</h1>\n"
    "<div><label>model<select id=\"model\"></select></label><span id=\"caps\"></span>"
    "<label style=\"float:right\">API key<input id=\"key\" type=\"password\" size=\"14\"></label></div>\n"
    "<p><textarea id=\"input\" placeholder=\"a prompt, a text\">The cat sat</textarea></p>\n"
    "<div><label>image (PNG)<input id=\"image\" type=\"file\" accept=\"image/png\"></label>"
    "<label>max tokens<input id=\"max_tokens\" type=\"number\" value=\"32\" min=\"1\" style=\"width:60px\"></label>"
    "<label>temperature<input id=\"temperature\" type=\"number\" value=\"0\" step=\"0.1\" min=\"0\" max=\"2\" "
    "style=\"width:60px\"></label></div>\n"
    "<div><button id=\"complete\">Complete</button><button id=\"embed\">Embed</button>"
    "<button id=\"classify\">Classify image</button><button id=\"attention\">Attention</button>"
    "<label>layer<select id=\"layer\"></select></label><label>head<select id=\"head\"></select></label></div>\n"
    "<div id=\"err\"></div><div id=\"out\"></div><div id=\"heat\"></div>\n",
    "<script>\n"
    "const $=id=>document.getElementById(id);let models=[],att=null;\n"
    "function hdr(){const h={'Content-Type':'application/json'};if($('key').value)h.Authorization='Bearer '+$('key').value;return h}\n"
    "async function api(path,body){const r=await fetch(path,{method:'POST',headers:hdr(),body:JSON.stringify(body)});"
    "const j=await r.json();if(!r.ok)throw new Error(r.status+': '+(j.error?j.error.message:JSON.stringify(j)));return j}\n"
    "function fail(e){$('err').textContent=String(e.message||e)}\n"
    "function caps(){const m=models.find(x=>x.id==$('model').value);const c=m?m.capabilities:[];"
    "$('caps').textContent=' '+c.join(', ');$('complete').disabled=!c.includes('generate');"
    "$('embed').disabled=!c.includes('embed');$('classify').disabled=!c.includes('classify-image')}\n"
    "async function load(){const r=await fetch('/v1/models',{headers:hdr()});const j=await r.json();"
    "if(!r.ok)throw new Error(r.status+': '+j.error.message);models=j.data;$('model').innerHTML='';"
    "for(const m of models){const o=document.createElement('option');o.value=o.textContent=m.id;$('model').appendChild(o)}caps()}\n"
    "async function complete(){$('err').textContent='';$('out').textContent='';"
    "const body={model:$('model').value,prompt:$('input').value,max_tokens:+$('max_tokens').value,"
    "temperature:+$('temperature').value,stream:true};"
    "const r=await fetch('/v1/completions',{method:'POST',headers:hdr(),body:JSON.stringify(body)});"
    "if(!r.ok){const j=await r.json();throw new Error(r.status+': '+j.error.message)}"
    "const rd=r.body.getReader(),dec=new TextDecoder();let buf='';"
    "for(;;){const {value,done}=await rd.read();if(done)break;buf+=dec.decode(value,{stream:true});let k;"
    "while((k=buf.indexOf('\\n\\n'))>=0){const ev=buf.slice(0,k);buf=buf.slice(k+2);if(!ev.startsWith('data: '))continue;"
    "const d=ev.slice(6);if(d=='[DONE]')continue;const j=JSON.parse(d);if(j.error)throw new Error(j.error.message);"
    "$('out').textContent+=j.choices[0].text;if(j.choices[0].finish_reason)$('out').dataset.finish=j.choices[0].finish_reason}}}\n"
    "async function embed(){$('err').textContent='';const j=await api('/v1/embeddings',{model:$('model').value,input:$('input').value});"
    "const e=j.data[0].embedding;$('out').textContent=e.length+' dimensions: '+e.slice(0,8).map(x=>x.toFixed(4)).join(' ')+' ...'}\n",
    "async function classify(){$('err').textContent='';const f=$('image').files[0];if(!f)throw new Error('choose a PNG file');"
    "const b=await new Promise((ok,no)=>{const rd=new FileReader();rd.onload=()=>ok(rd.result);rd.onerror=no;rd.readAsDataURL(f)});"
    "const j=await api('/v1/classifications',{model:$('model').value,input:b,top_k:5});"
    "$('out').textContent=j.data[0].labels.map(l=>l.label+'  '+l.score.toFixed(4)).join('\\n')}\n"
    "function fill(sel,n,v){sel.innerHTML='';for(let i=0;i<n;i++){const o=document.createElement('option');"
    "o.value=o.textContent=i;sel.appendChild(o)}sel.value=Math.min(v,n-1)}\n"
    "function esc(s){return s.replace(/[&<>\"]/g,c=>({'&':'&amp;','<':'&lt;','>':'&gt;','\"':'&quot;'}[c]))}\n"
    "function show(j){const n=j.tokens.length,m=j.attention;let h='<table class=\"att\" id=\"att\" data-layer=\"'+j.layer+"
    "'\" data-head=\"'+j.head+'\" data-n=\"'+n+'\"><thead><tr><th></th>';"
    "for(const t of j.tokens)h+='<th>'+esc(JSON.stringify(t))+'</th>';h+='</tr></thead><tbody>';"
    "for(let i=0;i<n;i++){h+='<tr><th>'+esc(JSON.stringify(j.tokens[i]))+'</th>';for(let k=0;k<n;k++){const v=m[i][k];"
    "const c=Math.round(255*(1-Math.sqrt(v)));h+='<td title=\"'+v.toFixed(4)+'\" data-v=\"'+v+'\" style=\"background:rgb('+c+','+c+',255)\"></td>'}"
    "h+='</tr>'}$('heat').innerHTML=h+'</tbody></table>'}\n"
    "async function attention(){$('err').textContent='';const j=await api('/v1/attention',{model:$('model').value,"
    "input:$('input').value,layer:+($('layer').value||0),head:+($('head').value||0)});"
    "fill($('layer'),j.layers,j.layer);fill($('head'),j.heads,j.head);show(j)}\n"
    "const run=f=>()=>f().catch(fail);\n"
    "$('complete').onclick=run(complete);$('embed').onclick=run(embed);$('classify').onclick=run(classify);"
    "$('attention').onclick=run(attention);$('layer').onchange=$('head').onchange=run(attention);$('model').onchange=caps;\n"
    "(async()=>{try{const p=new URLSearchParams(location.hash.slice(1));if(p.get('key'))$('key').value=p.get('key');"
    "await load();if(p.get('model'))$('model').value=p.get('model'),caps();if(p.has('input'))$('input').value=p.get('input');"
    "for(const k of['max_tokens','temperature'])if(p.has(k))$(k).value=p.get(k);"
    "if(p.has('layer'))fill($('layer'),+p.get('layer')+1,+p.get('layer'));if(p.has('head'))fill($('head'),+p.get('head')+1,+p.get('head'));"
    "const fs={complete,embed,attention};for(const r of(p.get('run')||'').split(',').filter(x=>fs[x]))await fs[r]()}"
    "catch(e){fail(e)}document.body.dataset.done='1'})();\n"
    "</script></body></html>\n",
    NULL};

int serve_page(serve_reply *r) {
    size_t n = 1;
    for (int i = 0; PAGE[i]; i++) n += strlen(PAGE[i]);
    if (!(r->body = malloc(n))) return serve_error(r, 500, NULL, NULL, "out of memory");
    r->body[0] = 0;
    for (int i = 0; PAGE[i]; i++) strcat(r->body, PAGE[i]);
    r->status = 200, r->type = "text/html; charset=utf-8";
    return 0;
}
