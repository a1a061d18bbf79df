--
-- PostgreSQL database dump
--


-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: arena_settings; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.arena_settings (
    key character varying(64) NOT NULL,
    value character varying(256) NOT NULL
);


--
-- Name: battles; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.battles (
    id character varying(64) NOT NULL,
    session character varying(32) NOT NULL,
    mode character varying(16) NOT NULL,
    anony boolean NOT NULL,
    model_a character varying(256) NOT NULL,
    model_b character varying(256) NOT NULL,
    created double precision NOT NULL,
    updated double precision NOT NULL,
    payload json NOT NULL
);


--
-- Name: votes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.votes (
    id integer NOT NULL,
    battle_id character varying(64) NOT NULL,
    voter character varying(32) NOT NULL,
    judge character varying(64) NOT NULL,
    mode character varying(16) NOT NULL,
    anony boolean NOT NULL,
    identity_leak boolean NOT NULL,
    winner character varying(16) NOT NULL,
    model_a character varying(256) NOT NULL,
    model_b character varying(256) NOT NULL,
    pair_id character varying(64) NOT NULL,
    tstamp double precision NOT NULL,
    record json NOT NULL
);


--
-- Name: votes_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.votes_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: votes_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.votes_id_seq OWNED BY public.votes.id;


--
-- Name: votes id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.votes ALTER COLUMN id SET DEFAULT nextval('public.votes_id_seq'::regclass);


--
-- Data for Name: arena_settings; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.arena_settings VALUES ('voter_salt', '31cb8cfbcd3c31492f865787a544ddb2');


--
-- Data for Name: battles; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.battles VALUES ('6wsKOsYxoBD0rduAn5DeDmpX', '5f4aaa37d067a293', 'prompt_set', true, 'gemma3-270m', 'smollm2-135m-instruct', 1795675982.560619, 1795675982.560619, '{"id": "6wsKOsYxoBD0rduAn5DeDmpX", "session": "5f4aaa37d067a293", "mode": "prompt_set", "models": ["gemma3-270m", "smollm2-135m-instruct"], "families": ["gemma", "smollm"], "params": null, "turns": [{"prompt": "Pretend you are a cat and explain why you knocked a glass off the table.", "seed": null, "response_a": "The cat is a very clever cat; it could have knocked the glass off the table if only it was not afraid of the water.", "response_b": "Yessir, it''s a cat-themed interpretation of heraldry. I''m facing the glass, and I just knocked it down. Okay, I''ll just retrain myself, no worries.", "latency": {}}], "state": "ready", "voted": false, "regenerations": 0, "created": 1795675982.560486, "ready_at": 1795675982.5605385, "pair_id": "ebed7d292f85a53b", "prompt_id": "arena-007", "category": "roleplay", "source": "prompts_pairs.jsonl", "leaks": {"a": [], "b": []}, "anony": true}');
INSERT INTO public.battles VALUES ('f91vFK7CGGBjgO4rCu-LwQju', '94b625007672e428', 'prompt_set', true, 'smollm2-135m-instruct', 'gemma3-270m', 1795675982.5997488, 1795675982.5997488, '{"id": "f91vFK7CGGBjgO4rCu-LwQju", "session": "94b625007672e428", "mode": "prompt_set", "models": ["smollm2-135m-instruct", "gemma3-270m"], "families": ["smollm", "gemma"], "params": null, "turns": [{"prompt": "Pretend you are a cat and explain why you knocked a glass off the table.", "seed": null, "response_a": "Yessir, it''s a cat-themed interpretation of heraldry. I''m facing the glass, and I just knocked it down. Okay, I''ll just retrain myself, no worries.", "response_b": "The cat is a very clever cat; it could have knocked the glass off the table if only it was not afraid of the water.", "latency": {}}], "state": "ready", "voted": false, "regenerations": 0, "created": 1795675982.599625, "ready_at": 1795675982.5996828, "pair_id": "ebed7d292f85a53b", "prompt_id": "arena-007", "category": "roleplay", "source": "prompts_pairs.jsonl", "leaks": {"a": [], "b": []}, "anony": true}');
INSERT INTO public.battles VALUES ('59SZVg-HGovIaqLn86sW8GZJ', '5f4aaa37d067a293', 'prompt_set', true, 'gemma3-270m', 'smollm2-135m-instruct', 1795675982.619668, 1795675982.619668, '{"id": "59SZVg-HGovIaqLn86sW8GZJ", "session": "5f4aaa37d067a293", "mode": "prompt_set", "models": ["gemma3-270m", "smollm2-135m-instruct"], "families": ["gemma", "smollm"], "params": null, "turns": [{"prompt": "I have 3 apples and buy 2 more, then eat one. How many apples do I have?", "seed": null, "response_a": "3", "response_b": "To solve this riddle, you need to think about the possible outcomes of your actions. If you buy one more apple, then you have 3 apples remaining after buying one more apple. If you eat one apple, you are left with 2 apples. So, the total number of apples is the sum of the apples you ate and the apples you didn''t eat. [\u2026]", "latency": {}}], "state": "ready", "voted": false, "regenerations": 0, "created": 1795675982.61955, "ready_at": 1795675982.619609, "pair_id": "116e66603612e41b", "prompt_id": "arena-011", "category": "reasoning", "source": "prompts_pairs.jsonl", "leaks": {"a": [], "b": []}, "anony": true}');
INSERT INTO public.battles VALUES ('ywd6KcQLelvijofLVWQwOEwz', '5f4aaa37d067a293', 'battle', true, 'smollm2-135m-instruct', 'gemma3-270m', 1795675988.9651425, 1795675988.9651425, '{"id": "ywd6KcQLelvijofLVWQwOEwz", "session": "5f4aaa37d067a293", "mode": "battle", "models": ["smollm2-135m-instruct", "gemma3-270m"], "families": ["smollm", "gemma"], "params": {"max_new_tokens": 8, "temperature": 0.0, "top_p": 1.0, "stop": []}, "turns": [{"prompt": "Name a colour.", "seed": 1402732605, "response_a": "The colour is a rare and precious one", "response_b": "Red, yellow, orange, green,", "latency": {"started": 1795675982.6396155, "ttft_a": 1.0998, "ttft_b": 1.26, "total_a": 3.1248, "total_b": 6.3254}}], "state": "ready", "voted": false, "regenerations": 0, "created": 1795675982.6395726, "ready_at": 1795675988.9650466, "pair_id": null, "prompt_id": null, "category": null, "source": null, "leaks": {"a": [], "b": []}, "anony": true}');
INSERT INTO public.battles VALUES ('5qgp0oEPv9KGBh_6DZBmis6N', '5c2f8b229cd32237', 'battle', true, 'smollm2-135m-instruct', 'gemma3-270m', 1795675995.1156697, 1795675995.1156697, '{"id": "5qgp0oEPv9KGBh_6DZBmis6N", "session": "5c2f8b229cd32237", "mode": "battle", "models": ["smollm2-135m-instruct", "gemma3-270m"], "families": ["smollm", "gemma"], "params": {"max_new_tokens": 8, "temperature": 0.0, "top_p": 1.0, "stop": []}, "turns": [{"prompt": "Name a fruit.", "seed": 886727678, "response_a": "The fruit I mentioned is the Banana", "response_b": "Apples.", "latency": {"started": 1795675988.978732, "ttft_a": 0.2526, "ttft_b": 0.5352, "total_a": 1.0688, "total_b": 6.1368}}], "state": "ready", "voted": false, "regenerations": 0, "created": 1795675988.978687, "ready_at": 1795675995.1155581, "pair_id": null, "prompt_id": null, "category": null, "source": null, "leaks": {"a": [], "b": []}, "anony": true}');


--
-- Data for Name: votes; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.votes VALUES (1, '6wsKOsYxoBD0rduAn5DeDmpX', '5f4aaa37d067a293', 'human:5f4aaa37d067a293', 'prompt_set', true, false, 'model_a', 'gemma3-270m', 'smollm2-135m-instruct', 'ebed7d292f85a53b', 1795675982.5810473, '{"pair_id": "ebed7d292f85a53b", "prompt": "Pretend you are a cat and explain why you knocked a glass off the table.", "model_a": "gemma3-270m", "model_b": "smollm2-135m-instruct", "response_a": "The cat is a very clever cat; it could have knocked the glass off the table if only it was not afraid of the water.", "response_b": "Yessir, it''s a cat-themed interpretation of heraldry. I''m facing the glass, and I just knocked it down. Okay, I''ll just retrain myself, no worries.", "winner": "model_a", "judge": "human:5f4aaa37d067a293", "judge_type": "human", "family_a": "gemma", "family_b": "smollm", "prompt_id": "arena-007", "category": "roleplay", "turn": 1, "tstamp": 1795675982.5810473, "conversation": {"model_a": [{"role": "user", "content": "Pretend you are a cat and explain why you knocked a glass off the table."}, {"role": "assistant", "content": "The cat is a very clever cat; it could have knocked the glass off the table if only it was not afraid of the water."}], "model_b": [{"role": "user", "content": "Pretend you are a cat and explain why you knocked a glass off the table."}, {"role": "assistant", "content": "Yessir, it''s a cat-themed interpretation of heraldry. I''m facing the glass, and I just knocked it down. Okay, I''ll just retrain myself, no worries."}]}, "meta": {"battle_id": "6wsKOsYxoBD0rduAn5DeDmpX", "voter": "5f4aaa37d067a293", "mode": "prompt_set", "anony": true, "identity_leak": false, "served_at": 1795675982.560486, "ready_at": 1795675982.5605385, "source": "prompts_pairs.jsonl"}, "version": 1}');
INSERT INTO public.votes VALUES (2, 'f91vFK7CGGBjgO4rCu-LwQju', '94b625007672e428', 'human:94b625007672e428', 'prompt_set', true, false, 'model_b', 'smollm2-135m-instruct', 'gemma3-270m', 'ebed7d292f85a53b', 1795675982.6087816, '{"pair_id": "ebed7d292f85a53b", "prompt": "Pretend you are a cat and explain why you knocked a glass off the table.", "model_a": "smollm2-135m-instruct", "model_b": "gemma3-270m", "response_a": "Yessir, it''s a cat-themed interpretation of heraldry. I''m facing the glass, and I just knocked it down. Okay, I''ll just retrain myself, no worries.", "response_b": "The cat is a very clever cat; it could have knocked the glass off the table if only it was not afraid of the water.", "winner": "model_b", "judge": "human:94b625007672e428", "judge_type": "human", "family_a": "smollm", "family_b": "gemma", "prompt_id": "arena-007", "category": "roleplay", "turn": 1, "tstamp": 1795675982.6087816, "conversation": {"model_a": [{"role": "user", "content": "Pretend you are a cat and explain why you knocked a glass off the table."}, {"role": "assistant", "content": "Yessir, it''s a cat-themed interpretation of heraldry. I''m facing the glass, and I just knocked it down. Okay, I''ll just retrain myself, no worries."}], "model_b": [{"role": "user", "content": "Pretend you are a cat and explain why you knocked a glass off the table."}, {"role": "assistant", "content": "The cat is a very clever cat; it could have knocked the glass off the table if only it was not afraid of the water."}]}, "meta": {"battle_id": "f91vFK7CGGBjgO4rCu-LwQju", "voter": "94b625007672e428", "mode": "prompt_set", "anony": true, "identity_leak": false, "served_at": 1795675982.599625, "ready_at": 1795675982.5996828, "source": "prompts_pairs.jsonl"}, "version": 1}');
INSERT INTO public.votes VALUES (3, '59SZVg-HGovIaqLn86sW8GZJ', '5f4aaa37d067a293', 'human:5f4aaa37d067a293', 'prompt_set', true, false, 'tie', 'gemma3-270m', 'smollm2-135m-instruct', '116e66603612e41b', 1795675982.6289468, '{"pair_id": "116e66603612e41b", "prompt": "I have 3 apples and buy 2 more, then eat one. How many apples do I have?", "model_a": "gemma3-270m", "model_b": "smollm2-135m-instruct", "response_a": "3", "response_b": "To solve this riddle, you need to think about the possible outcomes of your actions. If you buy one more apple, then you have 3 apples remaining after buying one more apple. If you eat one apple, you are left with 2 apples. So, the total number of apples is the sum of the apples you ate and the apples you didn''t eat. [\u2026]", "winner": "tie", "judge": "human:5f4aaa37d067a293", "judge_type": "human", "family_a": "gemma", "family_b": "smollm", "prompt_id": "arena-011", "category": "reasoning", "turn": 1, "tstamp": 1795675982.6289468, "conversation": {"model_a": [{"role": "user", "content": "I have 3 apples and buy 2 more, then eat one. How many apples do I have?"}, {"role": "assistant", "content": "3"}], "model_b": [{"role": "user", "content": "I have 3 apples and buy 2 more, then eat one. How many apples do I have?"}, {"role": "assistant", "content": "To solve this riddle, you need to think about the possible outcomes of your actions. If you buy one more apple, then you have 3 apples remaining after buying one more apple. If you eat one apple, you are left with 2 apples. So, the total number of apples is the sum of the apples you ate and the apples you didn''t eat. [\u2026]"}]}, "meta": {"battle_id": "59SZVg-HGovIaqLn86sW8GZJ", "voter": "5f4aaa37d067a293", "mode": "prompt_set", "anony": true, "identity_leak": false, "served_at": 1795675982.61955, "ready_at": 1795675982.619609, "source": "prompts_pairs.jsonl"}, "version": 1}');
INSERT INTO public.votes VALUES (4, 'ywd6KcQLelvijofLVWQwOEwz', '5f4aaa37d067a293', 'human:5f4aaa37d067a293', 'battle', true, false, 'model_a', 'smollm2-135m-instruct', 'gemma3-270m', '497ca03a9475794d', 1795675988.977086, '{"pair_id": "497ca03a9475794d", "prompt": "Name a colour.", "model_a": "smollm2-135m-instruct", "model_b": "gemma3-270m", "response_a": "The colour is a rare and precious one", "response_b": "Red, yellow, orange, green,", "winner": "model_a", "judge": "human:5f4aaa37d067a293", "judge_type": "human", "family_a": "smollm", "family_b": "gemma", "turn": 1, "tstamp": 1795675988.977086, "conversation": {"model_a": [{"role": "user", "content": "Name a colour."}, {"role": "assistant", "content": "The colour is a rare and precious one"}], "model_b": [{"role": "user", "content": "Name a colour."}, {"role": "assistant", "content": "Red, yellow, orange, green,"}]}, "meta": {"battle_id": "ywd6KcQLelvijofLVWQwOEwz", "voter": "5f4aaa37d067a293", "mode": "battle", "anony": true, "identity_leak": false, "served_at": 1795675982.6395726, "ready_at": 1795675988.9650466, "params": {"max_new_tokens": 8, "temperature": 0.0, "top_p": 1.0, "stop": []}, "seeds": [1402732605], "latency": [{"started": 1795675982.6396155, "ttft_a": 1.0998, "ttft_b": 1.26, "total_a": 3.1248, "total_b": 6.3254}], "regenerations": 0}, "version": 1}');
INSERT INTO public.votes VALUES (5, '5qgp0oEPv9KGBh_6DZBmis6N', '5c2f8b229cd32237', 'human:5c2f8b229cd32237', 'battle', true, false, 'tie (bothbad)', 'smollm2-135m-instruct', 'gemma3-270m', 'af6c254aa4ef9300', 1795675995.1287577, '{"pair_id": "af6c254aa4ef9300", "prompt": "Name a fruit.", "model_a": "smollm2-135m-instruct", "model_b": "gemma3-270m", "response_a": "The fruit I mentioned is the Banana", "response_b": "Apples.", "winner": "tie (bothbad)", "judge": "human:5c2f8b229cd32237", "judge_type": "human", "family_a": "smollm", "family_b": "gemma", "turn": 1, "tstamp": 1795675995.1287577, "conversation": {"model_a": [{"role": "user", "content": "Name a fruit."}, {"role": "assistant", "content": "The fruit I mentioned is the Banana"}], "model_b": [{"role": "user", "content": "Name a fruit."}, {"role": "assistant", "content": "Apples."}]}, "meta": {"battle_id": "5qgp0oEPv9KGBh_6DZBmis6N", "voter": "5c2f8b229cd32237", "mode": "battle", "anony": true, "identity_leak": false, "served_at": 1795675988.978687, "ready_at": 1795675995.1155581, "params": {"max_new_tokens": 8, "temperature": 0.0, "top_p": 1.0, "stop": []}, "seeds": [886727678], "latency": [{"started": 1795675988.978732, "ttft_a": 0.2526, "ttft_b": 0.5352, "total_a": 1.0688, "total_b": 6.1368}], "regenerations": 0}, "version": 1}');


--
-- Name: votes_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.votes_id_seq', 5, true);


--
-- Name: arena_settings arena_settings_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.arena_settings
    ADD CONSTRAINT arena_settings_pkey PRIMARY KEY (key);


--
-- Name: battles battles_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.battles
    ADD CONSTRAINT battles_pkey PRIMARY KEY (id);


--
-- Name: votes votes_battle_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.votes
    ADD CONSTRAINT votes_battle_id_key UNIQUE (battle_id);


--
-- Name: votes votes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.votes
    ADD CONSTRAINT votes_pkey PRIMARY KEY (id);


--
-- Name: ix_battles_session; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_battles_session ON public.battles USING btree (session);


--
-- Name: ix_votes_voter; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_votes_voter ON public.votes USING btree (voter);


--
-- Name: votes votes_battle_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.votes
    ADD CONSTRAINT votes_battle_id_fkey FOREIGN KEY (battle_id) REFERENCES public.battles(id);


--
-- PostgreSQL database dump complete
--


